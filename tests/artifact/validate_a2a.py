"""Validates each artifact in a JSON array against #/definitions/Artifact of the A2A v0.3.0 schema."""
import json
import sys

import jsonschema

schema_path, sample_path = sys.argv[1], sys.argv[2]
with open(schema_path) as f:
    schema = json.load(f)
with open(sample_path) as f:
    artifacts = json.load(f)

artifact_schema = dict(schema)
artifact_schema["$ref"] = "#/definitions/Artifact"
validator = jsonschema.Draft7Validator(artifact_schema)
failures = 0
for i, artifact in enumerate(artifacts):
    for err in validator.iter_errors(artifact):
        failures += 1
        print(f"artifact {i}: {err.message} at {list(err.absolute_path)}")
# Prove the validator is awake: an artifact without parts must be rejected.
if not list(validator.iter_errors({"artifactId": "x"})):
    print("validator accepted an artifact without parts")
    failures += 1
print(f"{len(artifacts)} artifacts checked, {failures} schema violations")
sys.exit(1 if failures or not artifacts else 0)
