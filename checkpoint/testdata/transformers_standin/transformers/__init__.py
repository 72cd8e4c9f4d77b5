"""A stand-in for the `transformers` package in checkpoint:training_args_bin_python_test.

Not transformers: only the class and Enum names (with the module paths and member values of
transformers 4.41.2) that a pickled TrainingArguments refers to, so that Python's torch.load
can rebuild loom's training_args.bin where transformers is not installed. It checks the names
and values loom writes; the same test runs against a real transformers by pointing PYTHONPATH
at it (checkpoint/BUILD, TRANSFORMERS_FOR_TESTS).
"""
