"""The sharded random regression, one test a shard (``make regress``; the plugin
tensorlsu.cosim.farm has the options and merges what the shards found). Not collected by
``make test``: it is named on the command line, with the plugin.

    pytest -p tensorlsu.cosim.farm tb/regress_shards.py -n 2 --regress-n 1000000
    pytest -p tensorlsu.cosim.farm tb/regress_shards.py --regress-n 1000000 --shards 4 --shard 3
"""

import regress
from tensorlsu.cosim import farm


def test_shard(shard, request, record_property):
    wrong = farm.wrong_commit(request.config)
    assert wrong is None, wrong
    opt = request.config.getoption
    n, shards = opt("--regress-n"), farm.shard_count(request.config)
    seed, policy = farm.shard_seed(opt("--regress-seed"), shard), farm.shard_policy(opt("--regress-policy"), shard)
    s = regress.run(farm.shard_sizes(n, shards)[shard], seed, policy, sim=opt("--regress-sim"),
                    ports=opt("--regress-ports"), optimize=opt("--regress-optimize"), progress=False,
                    mutate=opt("--regress-mutate") == shard)
    record_property("shard", shard)
    record_property("seed", seed)
    record_property("policy", policy)
    record_property("instructions", s.instructions)
    record_property("failed", s.failed)
    record_property("table", s.table)
    record_property("coverage", [[*cell, k] for cell, k in s.coverage.items()])
    record_property("errors", [[fam, form, list(errs)] for (fam, form), errs in
                               regress.cell_errors({policy: s.coverage}).items()])
    record_property("levels", regress.levels(opt("--regress-ports")))
    record_property("sim_s", s.sim_s)
    assert not s.failed, (f"shard {shard} of {shards} (seed {seed}, {policy}): {s.failed} failures; "
                          f"alone: {farm.reproduce(request.config, shard)}\n" + "\n".join(s.fails[:20]))
