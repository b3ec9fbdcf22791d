#!/usr/bin/env bash
# SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#
# make bench (and make bench-quick: --quick): selftests/bench.py, which says what it measures and
# how. Its arguments pass through (--rounds, --connects, --sizes, --out, --no-nft, --no-proxy,
# …; --help lists them). Root. Results: .output/bench/results.{json,md} (bench-quick:
# .output/bench-quick/).
exec python3 "$(dirname "${BASH_SOURCE[0]}")/bench.py" "$@"
