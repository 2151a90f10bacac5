# A Slurm-style launch: two processes started here with the variables srun sets (no MSCCLPP_MASTER_ADDR): each
# finds its rank from SLURM_PROCID/SLURM_NTASKS, its GPU from SLURM_LOCALID and the rendezvous on the first host
# of the node list. Run twice: as srun sets them (the step's list) and with only the job's list, in bracket form.
H=$(hostname)
if ! getent hosts "$H" >/dev/null 2>&1; then
  echo "launchers: slurm: this host's name $H does not resolve here; the node lists start with localhost"
  H=localhost
fi
export SLURM_JOB_ID=$((100000 + RANDOM)) SLURM_JOB_NAME=mscclpp-launchers SLURM_NTASKS=2 SLURM_NPROCS=2 \
  SLURM_NNODES=1 SLURM_JOB_NUM_NODES=1 SLURM_NODEID=0 SLURM_TASKS_PER_NODE=2 SLURM_STEP_ID=0 SLURM_STEPID=0 \
  SLURM_STEP_NUM_TASKS=2 SLURM_STEP_NUM_NODES=1 SLURM_STEP_TASKS_PER_NODE=2 SLURMD_NODENAME="$H" SLURM_CPUS_ON_NODE=2
OK=0
for mode in step job; do
  if [ $mode = step ]; then
    export SLURM_STEP_NODELIST="$H" SLURM_JOB_NODELIST="$H,gpu[02-04,07]" SLURM_NODELIST="$H,gpu[02-04,07]"
  else
    unset SLURM_STEP_NODELIST
    export SLURM_JOB_NODELIST="$H,gpu[02-04,07]" SLURM_NODELIST="$H,gpu[02-04,07]" SLURM_JOB_ID=$((SLURM_JOB_ID + 1))
  fi
  export SLURM_JOBID=$SLURM_JOB_ID
  P=()
  for r in 0 1; do
    SLURM_PROCID=$r SLURM_LOCALID=$r SLURM_GTIDS=0,1 timeout 120 "$B/mscclpp" test allreduce_twoshot --size 1M \
      --dtype f32 --iters 20 --no-timing >"$T/$mode$r.log" 2>&1 &
    P+=($!)
  done
  wait "${P[0]}"; A=$?; wait "${P[1]}"; C=$?
  echo "launchers: slurm ($mode node list ${SLURM_STEP_NODELIST:-$SLURM_JOB_NODELIST}) exit=$A,$C"
  tail -n 3 "$T/${mode}0.log" "$T/${mode}1.log"
  [ $A -eq 0 ] && [ $C -eq 0 ] && grep -q "^PASS plan=allreduce_twoshot" "$T/${mode}0.log" || OK=1
done
[ $OK -eq 0 ] || { echo "launchers: FAIL slurm-style launch"; exit 1; }
echo "launchers: slurm-style PASS"
