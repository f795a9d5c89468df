# What run.sh, run8.sh and run-r8.sh share (sourced; from the repository root): the binary, the model and
# profile, and the planners they time.
B="${SHARDPLAN_BINARY:-build/shard-plan}"
cal=data/measured/cpu-2core/search-picks/cal
types=table_wise,column_wise,data_parallel
profile=data/hardware/cpu-2core-torchrec.json
inputids="inputids=--model $cal --hardware $profile --sharding-types $types"
loop32="--model $cal --hardware $profile --sharding-types $types --measure-loop 32 --measure-loop-rivals torchrec_cw32 --kernel fbgemm-tbe"
cw32="cw32=--algo torchrec_cw32 --model $cal --sharding-types $types"
