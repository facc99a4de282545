def get_pipeline_model_parallel_world_size():
    return 1
def is_pipeline_stage_before_split():
    return True
