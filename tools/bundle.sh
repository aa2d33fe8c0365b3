#!/bin/sh
# make bundle: a relocatable tarball of kiln, the runtime libraries `kiln build` links, the
# shared libraries kiln needs that a GPU machine may lack, the example models and
# descriptors, the gpu test suite and the benchmark drivers. NVRTC and cuDNN are large and
# come with CUDA or PyTorch: the wrapper finds them in the toolkit or PyTorch's packages.
# usage: tools/bundle.sh BUILD_DIR OUT_DIR
set -eu
build=$1
out=$2
kiln=$build/generator/kiln
version=$("$kiln" --version | awk '{print $2}')
name=kiln-$version-$(uname -m)
stage=$(mktemp -d)
trap 'rm -rf "$stage"' EXIT
root=$stage/$name
mkdir -p "$root/bin" "$root/lib/kiln" "$root/lib/deps"
strip -o "$root/bin/kiln.bin" "$kiln"
# meson's static libraries are thin archives (they point into the build tree): copy members.
for lib in runtime/libkiln_runtime.a runtime/libkiln_runtime_cudnn.a runtime/standalone/libkiln_standalone.a; do
  dest="$root/lib/kiln/$(basename "$lib")"
  members=$(cd "$build" && ar t "$lib")
  (cd "$build" && ar rcs "$dest" $members)
  strip --strip-debug "$dest"
done
# Every Debian library kiln links (fmt, xxhash, the ONNX schema and protobuf, ...): all but
# the C/C++ runtime every Linux has and the CUDA libraries the wrapper finds there.
ldd "$kiln" | awk '$3 ~ /^\// {print $1, $3}' | while read -r soname path; do
  case $soname in
  libc.so.* | libm.so.* | libstdc++.so.* | libgcc_s.so.* | libpthread.so.* | librt.so.* | \
    libdl.so.* | libz.so.* | libnvrtc* | libcudnn* | libcuda.so.*) ;;
  *) cp -L "$path" "$root/lib/deps/$soname" ;;
  esac
done
cat > "$root/bin/kiln-env" <<'WRAP'
#!/bin/sh
# Runs a command with the libraries kiln's binaries need: their own, then NVRTC and cuDNN
# from the CUDA toolkit or from PyTorch's nvidia-* packages. usage: kiln-env CMD [ARG...]
here=$(cd "$(dirname "$0")/.." && pwd)
libs=$here/lib/deps
for d in "${CUDA_HOME:-/usr/local/cuda}/lib64" /usr/local/cuda/lib64; do
  [ -d "$d" ] && libs=$libs:$d
done
for py in python3 /usr/bin/python3; do
  extra=$("$py" -c 'import importlib.util, os
for m in ("nvidia.cuda_nvrtc", "nvidia.cudnn", "nvidia.cu13", "nvidia.cuda_runtime"):
    try:
        s = importlib.util.find_spec(m)
    except Exception:
        continue
    if s and s.submodule_search_locations:
        for base in s.submodule_search_locations:
            for sub in ("lib", "lib64"):
                if os.path.isdir(os.path.join(base, sub)): print(os.path.join(base, sub))' 2>/dev/null | tr '\n' ':')
  [ -n "$extra" ] && libs=$libs:$extra && break
done
export LD_LIBRARY_PATH=$libs${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
export KILN_RUNTIME_DIR=${KILN_RUNTIME_DIR:-$here/lib/kiln}
exec "$@"
WRAP
cat > "$root/bin/kiln" <<'WRAP'
#!/bin/sh
here=$(cd "$(dirname "$0")/.." && pwd)
exec "$here/bin/kiln-env" "$here/bin/kiln.bin" "$@"
WRAP
chmod +x "$root/bin/kiln" "$root/bin/kiln-env"
cp -r models gpus "$root/"
mkdir -p "$root/tests" "$root/bench"
cp -r tests/gpu "$root/tests/"
cp tests/integration/kiln_test.py "$root/tests/gpu/"
# The Hopper family's instances on the GPU (tests/kernels/hopper): run as
# KILN_HOPPER_CONV_SOURCE=tests/gpu/conv_instances.cpp bin/kiln-env tests/gpu/gpu_hopper_conv
if [ -x "$build/tests/kernels/hopper/gpu_hopper_conv" ]; then
  strip -o "$root/tests/gpu/gpu_hopper_conv" "$build/tests/kernels/hopper/gpu_hopper_conv"
  cp tests/kernels/hopper/conv_instances.cpp "$root/tests/gpu/"
fi
cp bench/*.py bench/*.sh "$root/bench/" 2>/dev/null || true
mkdir -p "$out"
tar -C "$stage" -czf "$out/$name.tar.gz" "$name"
echo "wrote $out/$name.tar.gz ($(du -h "$out/$name.tar.gz" | cut -f1)); unpack it and run $name/bin/kiln"
