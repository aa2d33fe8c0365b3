# The same ncu CSV against a generated manifest: measured and predicted (estimate_us) time per family: python3 prof_vs_manifest.py CSV MANIFEST
import csv, json, sys, re, collections
man=json.load(open(sys.argv[2]))
est={k['name']:k['estimate_us'] for k in man['kernels']}
meas=collections.defaultdict(list)
for r in csv.reader(open(sys.argv[1])):
    if len(r)>10 and r[0].isdigit():
        v=float(r[14].replace(',','')); us=v/1000 if r[13]=='ns' else v
        meas[r[4]].append(us)
fam=collections.defaultdict(lambda:[0,0,0])
for n,l in meas.items():
    if n not in est: continue
    f=re.sub(r'_(f16|f32|bf16|nchw|nhwc).*','',n)
    for us in l:
        fam[f][0]+=us; fam[f][1]+=est[n]; fam[f][2]+=1
for f,(m,e,c) in sorted(fam.items(), key=lambda x:-x[1][0]):
    print(f"{f:40s} n={c:4d} measured {m/1000:8.3f} ms predicted {e/1000:8.3f} ms ratio {m/max(e,1e-9):6.2f}")
