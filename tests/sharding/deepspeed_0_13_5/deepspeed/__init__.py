"""A stand-in for the `deepspeed` package (DeepSpeed 0.13.5), written for loom's tests; it is
not DeepSpeed's code.

It holds what DeepSpeed 0.13.5's own `zero_to_fp32.py` (vendored unmodified beside this package,
../zero_to_fp32.py) imports — `deepspeed.utils.logger` and ten key names from
`deepspeed.checkpoint.constants` — plus, in `deepspeed.runtime` and
`deepspeed.utils.tensor_fragment`, empty look-alikes of the three classes DeepSpeed's own
checkpoint files pickle, so that the same script can also read the real DeepSpeed checkpoints
in tests/testdata/deepspeed. DeepSpeed itself is not installed; the script reads the files with
torch alone. Nothing here reads or writes a checkpoint."""
