# torchrun --no-python starting the mscclpp binary: RANK, WORLD_SIZE, LOCAL_RANK, MASTER_ADDR/MASTER_PORT.
command -v torchrun >/dev/null || cannot torchrun "no torchrun on PATH (pip install torch)"
timeout 180 torchrun --no-python --standalone --nproc-per-node 2 \
  "$B/mscclpp" test allreduce_twoshot --size 1M --dtype f32 --iters 20 --no-timing >"$T/out" 2>&1
RC=$?
tail -n 20 "$T/out"
[ $RC -eq 0 ] || { echo "launchers: FAIL torchrun exit=$RC"; exit 1; }
grep -q "^PASS plan=allreduce_twoshot" "$T/out" || { echo "launchers: FAIL no PASS line"; exit 1; }
echo "launchers: torchrun PASS"
