"""Validates cairn's A2A v0.3.0 output against the A2A v0.3.0 schema: each artifact against #/definitions/Artifact,
each message part against #/definitions/Part."""
import json
import sys

import jsonschema

schema_path, sample_path = sys.argv[1], sys.argv[2]
with open(schema_path) as f:
    schema = json.load(f)
with open(sample_path) as f:
    sample = json.load(f)


def validator(definition):
    s = dict(schema)
    s["$ref"] = "#/definitions/" + definition
    return jsonschema.Draft7Validator(s)


failures = 0
for definition, key in (("Artifact", "artifacts"), ("Part", "parts")):
    v = validator(definition)
    for i, item in enumerate(sample[key]):
        for err in v.iter_errors(item):
            failures += 1
            print(f"{key}[{i}]: {err.message} at {list(err.absolute_path)}")
# Prove the validators are awake: an artifact without parts, and cairn's old made-up part kind, must be rejected.
if not list(validator("Artifact").iter_errors({"artifactId": "x"})):
    print("validator accepted an artifact without parts")
    failures += 1
if not list(validator("Part").iter_errors({"kind": "artifact", "artifact_id": "x"})):
    print("validator accepted a part of kind 'artifact'")
    failures += 1
print(f"{len(sample['artifacts'])} artifacts and {len(sample['parts'])} parts checked, {failures} schema violations")
sys.exit(1 if failures or not sample["artifacts"] or not sample["parts"] else 0)
