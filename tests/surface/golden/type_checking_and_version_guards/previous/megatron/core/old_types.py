Batch = dict
