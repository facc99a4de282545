def get_pipeline_model_parallel_world_size():
    return 1
