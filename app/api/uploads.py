"""Streaming multipart uploads: the file part goes to disk in chunks, capped in size.

Starlette's own form parser spools files without a size cap, so the submissions route
parses the request body itself with python-multipart's push parser: each chunk of the
file part is written to a temporary file beside its final place and counted; past the
cap the partial file is deleted and the request ends with 413. Text fields are small
(64 KiB each, 32 fields at most). Nothing is read into memory whole.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import secrets
from dataclasses import dataclass, field
from pathlib import Path
from typing import BinaryIO

from python_multipart import MultipartParser
from python_multipart.multipart import parse_options_header
from starlette.requests import Request

from proforma.app.read.errors import BadUpload, TooLarge, UnsupportedMedia
from proforma.app.read.formats import human_bytes

MAX_FIELD_BYTES = 64 * 1024
MAX_FIELDS = 32
FILE_FIELD = "file"


@dataclass
class ReceivedUpload:
    path: Path
    filename: str
    size: int
    sha256: str
    fields: dict[str, str] = field(default_factory=dict)


class _Sink:
    """Callbacks for MultipartParser: routes each part to a file or a text field."""

    def __init__(self, dest: Path, max_bytes: int):
        self.dest = dest
        self.max_bytes = max_bytes
        self.fields: dict[str, str] = {}
        self.filename: str | None = None
        self.size = 0
        self.digest = hashlib.sha256()
        self._header_name = b""
        self._header_value = b""
        self._headers: dict[bytes, bytes] = {}
        self._name: str | None = None
        self._buffer = bytearray()
        self._file: BinaryIO | None = None
        self._is_file = False
        self.file_parts = 0

    # python-multipart calls these with (data, start, end) slices
    def on_part_begin(self) -> None:
        self._headers = {}
        self._buffer = bytearray()
        self._name = None
        self._is_file = False

    def on_header_field(self, data: bytes, start: int, end: int) -> None:
        self._header_name += data[start:end]

    def on_header_value(self, data: bytes, start: int, end: int) -> None:
        self._header_value += data[start:end]

    def on_header_end(self) -> None:
        self._headers[self._header_name.lower()] = self._header_value
        self._header_name = b""
        self._header_value = b""

    def on_headers_finished(self) -> None:
        disposition, params = parse_options_header(self._headers.get(b"content-disposition", b""))
        if disposition != b"form-data" or b"name" not in params:
            raise BadUpload("A multipart part lacks 'Content-Disposition: form-data; name=...'.")
        self._name = params[b"name"].decode("utf-8", "replace")
        if self._name == FILE_FIELD:
            if self.file_parts:
                raise BadUpload(
                    "Send one file per upload: the form holds more than one 'file' part."
                )
            self.file_parts += 1
            self._is_file = True
            raw = params.get(b"filename", b"upload.parquet").decode("utf-8", "replace")
            self.filename = os.path.basename(raw.replace("\\", "/"))[:200] or "upload.parquet"
            self._file = open(self.dest, "wb")  # noqa: SIM115 - closed in on_part_end/abort
        elif len(self.fields) >= MAX_FIELDS:
            raise BadUpload(f"Too many form fields (more than {MAX_FIELDS}).")

    def on_part_data(self, data: bytes, start: int, end: int) -> None:
        chunk = data[start:end]
        if self._is_file:
            self.size += len(chunk)
            if self.size > self.max_bytes:
                raise TooLarge(
                    f"The file is larger than the upload limit of {human_bytes(self.max_bytes)} "
                    f"(PROFORMA_UPLOAD_MAX_BYTES); split the forecasts or ask the operator."
                )
            self.digest.update(chunk)
            assert self._file is not None
            self._file.write(chunk)
        else:
            self._buffer += chunk
            if len(self._buffer) > MAX_FIELD_BYTES:
                raise BadUpload(f"The form field {self._name!r} is longer than 64 KiB.")

    def on_part_end(self) -> None:
        if self._is_file:
            assert self._file is not None
            self._file.close()
            self._file = None
        elif self._name is not None:
            self.fields[self._name] = self._buffer.decode("utf-8", "replace")

    def abort(self) -> None:
        if self._file is not None:
            self._file.close()
            self._file = None
        with contextlib.suppress(FileNotFoundError):
            self.dest.unlink()


async def receive_upload(request: Request, folder: Path, max_bytes: int) -> ReceivedUpload:
    """Stream the request's multipart body: the 'file' part to `folder`, fields to memory."""
    ctype, params = parse_options_header(request.headers.get("content-type", ""))
    if ctype != b"multipart/form-data" or b"boundary" not in params:
        raise UnsupportedMedia(
            "Send the submission as multipart/form-data with a 'file' part holding the parquet file."
        )
    declared = request.headers.get("content-length")
    # Form overhead is small: refuse at once what cannot fit, before reading anything.
    if declared and declared.isdigit() and int(declared) > max_bytes + MAX_FIELDS * MAX_FIELD_BYTES:
        raise TooLarge(
            f"The request is {human_bytes(int(declared))}, over the upload limit of "
            f"{human_bytes(max_bytes)} (PROFORMA_UPLOAD_MAX_BYTES)."
        )
    folder.mkdir(parents=True, exist_ok=True)
    dest = folder / f"upload-{secrets.token_hex(8)}.partial"
    sink = _Sink(dest, max_bytes)
    callbacks = {
        name: getattr(sink, name)
        for name in (
            "on_part_begin",
            "on_header_field",
            "on_header_value",
            "on_header_end",
            "on_headers_finished",
            "on_part_data",
            "on_part_end",
        )
    }
    parser = MultipartParser(params[b"boundary"], callbacks)  # type: ignore[arg-type]
    try:
        async for chunk in request.stream():
            parser.write(chunk)
        parser.finalize()
    except (BadUpload, TooLarge):
        sink.abort()
        raise
    except Exception as exc:  # noqa: BLE001 - a malformed body from the client
        sink.abort()
        raise BadUpload(f"The multipart body is malformed: {str(exc)[:200]}") from None
    if sink.file_parts == 0 or not dest.exists():
        sink.abort()
        raise BadUpload("The form has no 'file' part: attach the parquet file as field 'file'.")
    if sink.size == 0:
        sink.abort()
        raise BadUpload("The uploaded file is empty.")
    return ReceivedUpload(
        dest, sink.filename or "upload.parquet", sink.size, sink.digest.hexdigest(), sink.fields
    )
