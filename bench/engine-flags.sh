# The engine-shaping flags bench/compare.sh and bench/read-trigger.sh pass to both tools
# (sourced, not run): sets COMMON from NUM, THREADS and VALUE_SIZE. A flag given again
# after these (e.g. `--cache_size`) overrides it in both tools.
COMMON=(
  --num="$NUM" --threads="$THREADS" --key_size=16 --value_size="$VALUE_SIZE" --compression_ratio=0.5
  --bloom_bits=10 --cache_size=33554432 --block_size=4096
  --write_buffer_size=67108864 --max_write_buffer_number=2
  --target_file_size_base=67108864 --max_bytes_for_level_base=268435456
  --max_bytes_for_level_multiplier=10 --num_levels=7
  --level_compaction_dynamic_level_bytes=false --compaction_pri=3
  --level0_file_num_compaction_trigger=4 --level0_slowdown_writes_trigger=20
  --level0_stop_writes_trigger=36 --max_background_jobs=2 --subcompactions=1
  --sync=0 --disable_wal=0 --seed=1 --histogram=1 --statistics=1
)
