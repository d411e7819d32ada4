#!/usr/bin/env bash
# Regenerates the README's screenshots. docs/city.png: the golden recording with the Person
# allocation site selected, so its references show. Needs a display or xvfb-run.
set -euo pipefail
cd "$(dirname "$0")/.."
cargo build -p memcity-viewer
bin="${CARGO_TARGET_DIR:-target}/debug/memcity"
xvfb-run -a -s "-screen 0 1280x720x24" "$bin" replay proto/tests/data/golden-v1.mcrec \
  --select '(default package)/LinkedListLeak$Person/LinkedListLeak.main(LinkedListLeak.java:33)' \
  --screenshot docs/city.png
# docs/viewer.png: the whole window as a user sees it, the Person type selected (its details
# panel lists allocation sites and the references to follow), the settings panel open.
xvfb-run -a -s "-screen 0 1280x720x24" "$bin" replay proto/tests/data/golden-v1.mcrec \
  --select '(default package)/LinkedListLeak$Person' --settings --hud \
  --screenshot docs/viewer.png
