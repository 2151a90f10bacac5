# mpirun -np 2 with the `mpi`-feature binary: MPI_COMM_WORLD gives the ranks and carries the setup messages.
command -v mpirun >/dev/null || cannot mpirun "no mpirun on PATH (install Open MPI)"
[ -x "$B/mpi_allreduce" ] || cannot mpirun "$B/mpi_allreduce is missing: collect builds it with --features mpi"
if ldd "$B/mpi_allreduce" | grep -q "not found"; then
  cannot mpirun "mpi_allreduce cannot load its MPI library here: $(ldd "$B/mpi_allreduce" | grep 'not found' | tr -s ' \t' ' ')"
fi
"$B/mscclpp" plan allreduce_twoshot --world-size 2 --in-place -o "$T/ar.json" || exit 1
X=""
for v in MSCCLPP_SHARED_GPU CUDA_VISIBLE_DEVICES NCCL_NVLS_ENABLE LD_LIBRARY_PATH MSCCLPP_CACHE_DIR MSCCLPP_WAIT_TIMEOUT_MS MSCCLPP_BOOTSTRAP_TIMEOUT_MS; do
  [ -n "${!v:-}" ] && X="$X -x $v"
done
# shellcheck disable=SC2086
timeout 180 mpirun --allow-run-as-root --bind-to none -np 2 $X "$B/mpi_allreduce" "$T/ar.json" 1048576 >"$T/out" 2>&1
RC=$?
cat "$T/out"
[ $RC -eq 0 ] || { echo "launchers: FAIL mpirun exit=$RC"; exit 1; }
[ "$(grep -c '^mpi_allreduce: rank .*: OK' "$T/out")" -eq 2 ] || { echo "launchers: FAIL not both ranks reported OK"; exit 1; }
echo "launchers: mpirun (MPI bootstrap) PASS"
