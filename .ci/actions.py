"""Helpers for the packaging checks in .ci/package (PyYAML, which pre-commit
brings along).

  as-workflow ACTION_YML OUT   action.yml's steps as a workflow, so actionlint
                               checks the composite action's steps, inputs
                               and expressions too (JSON is YAML)
  readme-block README FIRST OUT  the fenced block of README whose first line is
                               FIRST (or FIRST, a space and a comment)
  scripts OUTDIR FILE...       every `run:` script of the action/workflow files
                               as OUTDIR/*.sh for shellcheck, `${{ }}` replaced
                               by a variable
"""
import json
import pathlib
import re
import sys

import yaml


def as_workflow(action_path, out):
    action = yaml.safe_load(open(action_path))
    inputs = {
        name: {
            "description": spec.get("description", name),
            "required": bool(spec.get("required", False)),
            "default": str(spec.get("default", "")),
            "type": "string",
        }
        for name, spec in action.get("inputs", {}).items()
    }
    workflow = {
        "name": f"{action_path} as a workflow",
        "on": {"workflow_dispatch": {"inputs": inputs}},
        "jobs": {"action": {"runs-on": "ubuntu-latest", "steps": action["runs"]["steps"]}},
    }
    pathlib.Path(out).write_text(json.dumps(workflow, indent=1) + "\n")


def readme_block(readme, first, out):
    lines = open(readme).read().splitlines()
    i = 0
    while i < len(lines):
        if lines[i].startswith("```"):
            j = i + 1
            while j < len(lines) and not lines[j].startswith("```"):
                j += 1
            body = lines[i + 1 : j]
            if body and (body[0].strip() == first or body[0].startswith(first + " ")):
                pathlib.Path(out).write_text("\n".join(body) + "\n")
                return
            i = j
        i += 1
    sys.exit(f"{readme}: no fenced block starting with {first!r}")


def steps_of(doc):
    if "runs" in doc:
        yield from doc["runs"].get("steps", [])
    for job in (doc.get("jobs") or {}).values():
        yield from job.get("steps", [])


def scripts(outdir, files):
    out = pathlib.Path(outdir)
    out.mkdir(parents=True, exist_ok=True)
    n = 0
    for f in files:
        for i, step in enumerate(steps_of(yaml.safe_load(open(f)))):
            if "run" not in step:
                continue
            body = re.sub(r"\$\{\{.*?\}\}", "${EXPRESSION}", step["run"])
            name = re.sub(r"[^A-Za-z0-9]+", "-", f"{f}-{i}")
            (out / f"{name}.sh").write_text(
                f"#!/usr/bin/env bash\n# {f}, step {i}: {step.get('name', '')}\n{body}"
            )
            n += 1
    print(f"{n} run: script(s) from {len(files)} file(s)")


cmd, *args = sys.argv[1:]
{"as-workflow": as_workflow, "readme-block": readme_block}.get(cmd, lambda *a: scripts(a[0], a[1:]))(*args)
