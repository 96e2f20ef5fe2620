#!/bin/sh
# Regenerate the whole generated corpus (run from anywhere; needs the torch 2.13.0 CPU venv).
# PYTHON defaults to /tmp/probe-venv/bin/python.
set -e
cd "$(dirname "$0")/../.."
exec "${PYTHON:-/tmp/probe-venv/bin/python}" corpus/generate/generate.py "$@"
