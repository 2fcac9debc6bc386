"""The long-run generator's parts (benchmarks/gen_longrun.py is the entry point and says what is HELD OUT):

    plan              the world, the attempts, the failures (pure)
    sink              files of timed lines, written in time order
    render            what every launcher shares; the stories and their cascades
    launch_torchrun   torchrun consoles, --log-dir, Kubeflow pods
    launch_other      Slurm srun --label, the DeepSpeed launcher over pdsh (held out)
    truth             truth.json
"""
