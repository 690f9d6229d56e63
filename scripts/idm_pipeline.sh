#!/usr/bin/env bash
# The IDM figures' pipeline (docs/idm.md): demonstrations with 64 px frames (train + held-out layouts),
# then `icalkit train-idm` (configs/idm.yaml) invoked until its checkpoint says done. Resumable: finished
# demo folders are kept, training resumes from runs/idm/train/checkpoint.
set -euo pipefail
cd "$(dirname "$0")/.."
IK=${IK:-.venv/bin/icalkit}
for spec in "train 25 1 demos_train" "valid_unseen 6 2 demos_unseen"; do
  read -r split n seed dir <<<"$spec"
  test -f "runs/idm/$dir/.done" || { $IK demos n_per_type="$n" seed="$seed" split="$split" env.frame_size=64 \
      out_dir="runs/idm/$dir" hf_dataset=false wandb.mode=disabled && touch "runs/idm/$dir/.done"; }
done
for _ in 1 2 3 4 5 6; do
  grep -q '"done": true' runs/idm/train/checkpoint/trainer_state.json 2>/dev/null && break
  $IK train-idm wandb.mode=disabled progress=false "$@"
done
