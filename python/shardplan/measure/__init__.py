"""Training steps of a shard-plan plan on the real stack (TorchRec + FBGEMM): `python -m shardplan.measure`."""
