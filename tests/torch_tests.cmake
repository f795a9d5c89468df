# Tests of the LibTorch parts: their own executable, linked with shardplan_torch.
