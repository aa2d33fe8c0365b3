"""`kiln bench --train` sweeps a training step's layers: resnet18's weight gradients on the
h100 (the Hopper family's, conv2d_backward_weight_hopper_wgmma, where its C and O are multiples
of 64) checked on the emulator beside its forward and data-gradient convs, through the same
sweep as inference layers; without --train no weight gradient is swept."""
import csv
import os

import kiln_test as kt

d = kt.tmpdir()


def rows(out):
    with open(os.path.join(out, "sweep.csv")) as f:
        return list(csv.DictReader(f))


common = ["resnet18", "--image", "64", "--batch", "4", "--gpu", "h100", "--device", "emu",
          "--dtype", "f16", "--variants", "default", "--layers", "layer2.1.conv2"]
out = os.path.join(d, "train")
kt.kiln("bench", *common, "--train", "-o", out)
r = rows(out)
ops = {x["op"] for x in r}
kt.check("conv2d.backward_weight" in ops and "conv2d.forward" in ops, f"ops swept: {ops}")
for x in r:
    kt.check(x["check"] == "pass", f"{x['variant']}: {x['check']} {x['rel_err']}")
wgrad = [x for x in r if x["op"] == "conv2d.backward_weight"]
kt.check(any(x["family"] == "conv2d_backward_weight_hopper_wgmma" for x in wgrad),
         f"no Hopper weight gradient chosen: {[x['variant'] for x in wgrad]}")
print(f"--train: {len(r)} rows, {len(wgrad)} weight gradients: {[x['variant'][:60] for x in wgrad]}")

out = os.path.join(d, "infer")
kt.kiln("bench", *common, "-o", out)
kt.check(all(x["op"] != "conv2d.backward_weight" for x in rows(out)), "inference swept a weight gradient")

kt.finish()
