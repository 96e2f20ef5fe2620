#!/bin/sh
# Regenerate the whole generated corpus (run from anywhere; needs the torch 2.13.0 CPU venv with
# transformers, lightning and tqdm). PYTHON defaults to /tmp/probe-venv/bin/python.
#
# Each generator records its own cases into corpus/<case>/: generate.py and more_failures.py
# have drivers; the others take --record VARIANT for each key of their CASES dict.
# disk_full_paths.py and requires_grad_hooks.py need a hand-made full filesystem (root, tmpfs);
# their docstrings give the commands.
set -e
cd "$(dirname "$0")/../.."
PYTHON="${PYTHON:-/tmp/probe-venv/bin/python}"

"$PYTHON" corpus/generate/generate.py "$@"
"$PYTHON" corpus/generate/more_failures.py --make-cases

for script in trends more_cases hard_cascade hard_ranks hard_trends; do
    variants=$("$PYTHON" - "corpus/generate/$script.py" <<'EOF'
import ast, sys
tree = ast.parse(open(sys.argv[1]).read())
for node in tree.body:
    if isinstance(node, ast.Assign) and any(getattr(t, "id", "") == "CASES" for t in node.targets):
        print(" ".join(ast.literal_eval(key) for key in node.value.keys))
EOF
)
    for variant in $variants; do
        "$PYTHON" "corpus/generate/$script.py" --record "$variant"
    done
done
