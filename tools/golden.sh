#!/bin/sh
# generated/: the committed output of `kiln generate` for the example models on the H200
# descriptor, so every change to generated code is seen in review.
#   tools/golden.sh KILN update   rewrite generated/
#   tools/golden.sh KILN check    regenerate into a scratch directory and diff (the golden test)
set -eu
kiln=$(cd "$(dirname "$1")" && pwd)/$(basename "$1")
mode=$2
cd "$(dirname "$0")/.."
cases="resnet18 noscope_roundabout"
scratch=$(mktemp -d)
trap 'rm -rf "$scratch"' EXIT
status=0
for m in $cases; do
  "$kiln" generate "models/$m.json" --gpu gpus/h200.json -o "$scratch/${m}_h200" > /dev/null
  if [ "$mode" = update ]; then
    rm -rf "generated/${m}_h200"
    mkdir -p generated
    cp -r "$scratch/${m}_h200" "generated/${m}_h200"
  elif ! diff -r "generated/${m}_h200" "$scratch/${m}_h200" > "$scratch/diff" 2>&1; then
    echo "generated/${m}_h200 differs from what kiln generates now (tools/golden.sh $kiln update, then review):"
    head -40 "$scratch/diff"
    status=1
  fi
done
[ "$mode" = update ] && echo "updated generated/"
exit $status
