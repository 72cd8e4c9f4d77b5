"""Prints yaml.dump(value, sort_keys=False) of the JSON file argv[1] (key order kept): the
reference hub/model_card_test compares loom's YAML emitter with (Debian's PyYAML)."""
import collections
import json
import sys

import yaml

with open(sys.argv[1], encoding="utf-8") as f:
    value = json.load(f, object_pairs_hook=dict)
sys.stdout.write(yaml.dump(value, sort_keys=False))
