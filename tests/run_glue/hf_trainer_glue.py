"""Trains a BERT folder on an SST-2-layout task with the REAL Hugging Face Trainer.

Run with transformers 4.38.2 + accelerate 0.27.2 on the path (see run_glue_hf_trainer_test.sh).
The calls follow transformers 4.38's examples/pytorch/text-classification/run_glue.py for a
GLUE task with pad_to_max_length (its default): set_seed(seed) before the model is loaded,
AutoTokenizer / AutoModelForSequenceClassification.from_pretrained, tokenize each row with
padding="max_length", max_length=min(max_seq_length, model_max_length), truncation=True, then
Trainer(model, args, train_dataset, eval_dataset, tokenizer, default_data_collator), train,
save_model, evaluate. `datasets` is replaced by a list of dicts read from the .tsv files.

  usage: hf_trainer_glue.py MODEL_DIR DATA_DIR OUTPUT_DIR MAX_SEQ_LENGTH MAX_TRAIN_SAMPLES
             MAX_EVAL_SAMPLES RESUME_FROM_CHECKPOINT|- -- TRAINING_ARGUMENTS_JSON
(run_glue's max_train_samples / max_eval_samples: the first rows of each file.)
Writes OUTPUT_DIR/log_history.json (trainer.state.log_history, then the final evaluate()),
the trained model (save_model: model.safetensors) and the checkpoints save_strategy asks for.
"""

import csv
import json
import sys

import torch
import transformers
import transformers.trainer
from transformers import (AutoModelForSequenceClassification, AutoTokenizer, Trainer,
                          TrainingArguments, default_data_collator, set_seed)


class _Torch113DataLoader(torch.utils.data.DataLoader):
    """transformers 4.38 passes prefetch_factor=None (torch 2's default); torch 1.13's DataLoader
    wants its own default, 2, when num_workers is 0. Same loader otherwise (no random draws)."""

    def __init__(self, *args, prefetch_factor=None, **kwargs):
        if prefetch_factor is not None:
            kwargs["prefetch_factor"] = prefetch_factor
        super().__init__(*args, **kwargs)


def read_sst2(path, limit=None):
    with open(path, newline="") as f:
        rows = list(csv.DictReader(f, delimiter="\t", quoting=csv.QUOTE_NONE))
    return rows if limit is None else rows[:limit]


def tokenize(tokenizer, rows, max_length):
    out = []
    for row in rows:
        enc = tokenizer(row["sentence"], padding="max_length", max_length=max_length,
                        truncation=True)
        item = {k: enc[k] for k in ("input_ids", "token_type_ids", "attention_mask")}
        item["label"] = int(row["label"])
        out.append(item)
    return out


def main(argv):
    model_dir, data_dir, output_dir, max_seq_length, max_train, max_eval = argv[1:7]
    resume = argv[7] if argv[7] != "-" else None
    assert argv[8] == "--"
    kwargs = json.loads(argv[9])
    if torch.__version__.startswith("1."):
        transformers.trainer.DataLoader = _Torch113DataLoader
    training_args = TrainingArguments(output_dir=output_dir, **kwargs)
    # run_glue.py: "Set seed before initializing model."
    set_seed(training_args.seed)
    tokenizer = AutoTokenizer.from_pretrained(model_dir, use_fast=True)
    model = AutoModelForSequenceClassification.from_pretrained(model_dir, num_labels=2,
                                                               finetuning_task="sst2")
    max_length = min(int(max_seq_length), tokenizer.model_max_length)
    train = tokenize(tokenizer, read_sst2(f"{data_dir}/train.tsv", int(max_train)), max_length)
    evals = tokenize(tokenizer, read_sst2(f"{data_dir}/dev.tsv", int(max_eval)), max_length)
    trainer = Trainer(model=model, args=training_args, train_dataset=train, eval_dataset=evals,
                      tokenizer=tokenizer, data_collator=default_data_collator)
    trainer.train(resume_from_checkpoint=resume)
    trainer.save_model()
    metrics = trainer.evaluate()
    with open(f"{output_dir}/log_history.json", "w") as f:
        json.dump({"transformers": transformers.__version__,
                   "log_history": trainer.state.log_history, "eval": metrics}, f, indent=1)


if __name__ == "__main__":
    main(sys.argv)
