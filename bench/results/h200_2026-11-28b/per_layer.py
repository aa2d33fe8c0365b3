# The per-layer table and geomean of cuDNN / kiln: python3 per_layer.py > per_layer.txt
import csv, math
rows = list(csv.DictReader(open('bench_r50_256_sweep.csv')))
old = {r['layers']: r for r in csv.DictReader(open('../h200_2026-11-28/bench_r50_256_sweep.csv'))}
g = []
print('| layer | kiln kernel | kiln us | cuDNN us | cuDNN / kiln | kiln TF/s | priced us | same layer, 2026-11-28 (us) |')
print('|---|---|---|---|---|---|---|---|')
for r in rows:
    if not r['cudnn_ms']:
        continue
    k, c = 1000 * float(r['median_ms']), 1000 * float(r['cudnn_ms'])
    g.append(math.log(c / k))
    o = old.get(r['layers'])
    v = r['variant'].split('_nhwc_')[1].split('_n256')[0]
    print('| %s | %s | %.1f | %.1f | %.2f | %.0f | %.1f | %s |' % (r['layers'].split('+')[0], v, k, c, c / k, float(r['tflops']), float(r['predicted_us']), '%.1f' % (1000 * float(o['median_ms'])) if o else '-'))
print()
print('geomean cuDNN / kiln over %d layers: %.3f' % (len(g), math.exp(sum(g) / len(g))))
