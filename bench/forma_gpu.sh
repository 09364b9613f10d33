#!/usr/bin/env bash
# Forma on one GPU: training and forecast throughput of the paper preset (fp32, bf16,
# bf16 + torch.compile) on real exported tuple windows, then one short epoch through the
# DDP entry point (torchrun, one rank) whose checkpoint is loaded back on a CPU.
#   bench/forma_gpu.sh WINDOWS_DIR OUT_DIR
# WINDOWS_DIR: a folder of `proforma forma export` (windows_train.arrow, identities.arrow;
# zstd-compressed IPC files are read too). Needs a CUDA build of torch; prints JSON lines.
set -u
W=${1:?windows folder}; OUT=${2:?output folder}
mkdir -p "$OUT"
export PYTHONUNBUFFERED=1
nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader
python3 -c "import torch; print('torch', torch.__version__, torch.cuda.get_device_name())"
B=(python3 bench/forma.py --presets paper --device cuda --windows "$W" --origins 4096
   --infer-origins 2048 --infer-batch 256 --workers 8)
timeout 70 "${B[@]}" --train-batches 40 --warmup-batches 3 | tee "$OUT/fp32.jsonl"
timeout 70 "${B[@]}" --bf16 --train-batches 40 --warmup-batches 3 | tee "$OUT/bf16.jsonl"
timeout 120 "${B[@]}" --bf16 --compile --train-batches 60 --warmup-batches 12 --no-inference \
    | tee "$OUT/bf16_compile.jsonl"
timeout 90 torchrun --standalone --nproc_per_node=1 -m proforma.models.forma.train \
    --windows "$W/windows_train.arrow" --identities "$W/identities.arrow" --preset paper \
    --seed 60 --epochs 1 --origins-per-epoch 2048 --bf16 --workers 8 \
    --out "$OUT/paper-seed60.pt" 2>&1 | tail -5 | tee "$OUT/train.txt"
