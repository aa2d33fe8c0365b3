# ncu --csv --metrics gpu__time_duration.sum log (CSV) -> time per kernel family and the N longest kernels: python3 prof_families.py CSV N
import csv, sys, re, collections
rows=[r for r in csv.reader(open(sys.argv[1])) if len(r)>10 and r[0].isdigit()]
# header: ID,Process ID,Process Name,Host Name,Kernel Name,Context,Stream,Block,Grid,Device,CC,Section,Metric Name,Unit,Value
tot=0; fam=collections.defaultdict(float); cnt=collections.Counter(); per=[]
for r in rows:
    name=r[4]; unit=r[13]; v=float(r[14].replace(',',''))
    us = v/1000 if unit=='ns' else v if unit=='us' else v*1000
    tot+=us
    f=re.sub(r'_(f16|f32|bf16).*','',name)
    if 'conv2d_backward_weight_mma' in name: f='conv2d_backward_weight_mma'
    fam[f]+=us; cnt[f]+=1; per.append((us,name))
print(f"{len(rows)} kernels, total {tot/1000:.2f} ms")
for f,us in sorted(fam.items(), key=lambda x:-x[1])[:25]: print(f"  {f:45s} {cnt[f]:4d} {us/1000:8.3f} ms")
print("top kernels:")
for us,n in sorted(per,reverse=True)[:int(sys.argv[2]) if len(sys.argv)>2 else 15]: print(f"  {us:9.1f} us {n[:150]}")
