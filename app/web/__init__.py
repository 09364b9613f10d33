"""The leaderboard web pages: Jinja templates and static JS/CSS, all served locally."""

from pathlib import Path

WEB_DIR = Path(__file__).resolve().parent
STATIC_DIR = WEB_DIR / "static"
TEMPLATES_DIR = WEB_DIR / "templates"
