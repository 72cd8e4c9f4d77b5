"""Writes a randomly initialised Llama with the REAL transformers (save_pretrained), its
weights split into several safetensors shards with model.safetensors.index.json.

usage: make_llama_folder.py OUT_DIR VOCAB HIDDEN INTERMEDIATE LAYERS HEADS KV_HEADS MAX_SHARD
"""
import sys

import torch
import transformers


def main():
    out, vocab, hidden, inter, layers, heads, kv, shard = sys.argv[1:]
    config = transformers.LlamaConfig(
        vocab_size=int(vocab), hidden_size=int(hidden), intermediate_size=int(inter),
        num_hidden_layers=int(layers), num_attention_heads=int(heads),
        num_key_value_heads=int(kv), max_position_embeddings=256, tie_word_embeddings=False,
        bos_token_id=1, eos_token_id=2)
    torch.manual_seed(0)
    model = transformers.LlamaForCausalLM(config)
    model.save_pretrained(out, safe_serialization=True, max_shard_size=shard)
    numel = sum(p.numel() for p in model.parameters())
    print(f"make_llama_folder: {numel} parameters, {numel * 4} bytes in float32")


if __name__ == "__main__":
    main()
