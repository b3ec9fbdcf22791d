#!/bin/sh
# What pastebin.com serves in the e2e test: proof that a fetched script ran.
echo "paste script: ran as $(id -un) in $(pwd)"
touch "${E2E_WORK:-.}/paste-ran"
