# nvcc (compile only, no GPU needed): a deep process tree (cudafe++, cicc,
# ptxas, fatbinary, the host gcc) memoized like any other step. Skipped where
# CUDA is not installed. Three compiles only: nvcc is slow.
source "$(dirname "$0")/lib.sh"

NVCC=${NVCC:-/usr/local/cuda/bin/nvcc}
if [ ! -x "$NVCC" ]; then
    skip "$NVCC not found"
fi

W=$(workdir)
cd "$W"
cat > k.cu <<'EOF'
__global__ void scale(float *a, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) a[i] = a[i] * 2.0f;
}
EOF
NV=("$NVCC" -c k.cu -o k.o)

section "nvcc -c: miss, then hit with an identical object"
run_expect miss "new step" -- "${NV[@]}"
[ -s k.o ] || fail "nvcc made no k.o"
cp k.o first.o
rm k.o
run_expect hit "" -- "${NV[@]}"
assert_same k.o first.o

section "editing the kernel misses"
sed -i 's/2.0f/3.0f/' k.cu
run_expect miss "inputs changed" -- "${NV[@]}"
assert_differ k.o first.o

check_status_file_format
