#!/usr/bin/env bash
# The GPU-machine check of //tools:gpu_order: builds it with gpu/build_standalone.sh
# and runs it with and without CUDA_VISIBLE_DEVICES / CUDA_DEVICE_ORDER next to nvidia-smi and
# torch. Run from the repository root on a machine with an NVIDIA driver.
set -x
g++ --version | head -1
gpu/build_standalone.sh /tmp/gpu_order || exit 1
ldd /tmp/gpu_order | head -5
/tmp/gpu_order
echo "--- with --nproc_per_node 2"
/tmp/gpu_order --nproc_per_node 2
UUID=$(nvidia-smi --query-gpu=uuid --format=csv,noheader | head -1)
echo "--- CUDA_VISIBLE_DEVICES=0"
CUDA_VISIBLE_DEVICES=0 /tmp/gpu_order
echo "--- CUDA_VISIBLE_DEVICES=${UUID:0:12}"
CUDA_VISIBLE_DEVICES=${UUID:0:12} /tmp/gpu_order
echo "--- CUDA_VISIBLE_DEVICES=1,0 (1 is invalid)"
CUDA_VISIBLE_DEVICES=1,0 /tmp/gpu_order
echo "--- CUDA_VISIBLE_DEVICES= (empty)"
CUDA_VISIBLE_DEVICES= /tmp/gpu_order
echo "--- CUDA_DEVICE_ORDER=PCI_BUS_ID"
CUDA_DEVICE_ORDER=PCI_BUS_ID /tmp/gpu_order
echo "--- nvidia-smi"
nvidia-smi -L
nvidia-smi --query-gpu=index,name,pci.bus_id,uuid,memory.total,compute_cap --format=csv
python3 -c "import torch; print('torch', torch.__version__, torch.cuda.device_count(), torch.cuda.get_device_name(0) if torch.cuda.device_count() else '')"
