import json,glob,re,sys,os,statistics as st
D=os.path.dirname(os.path.abspath(__file__))
rows={}
for f in sorted(glob.glob(D+'/out_*/*.json')):
    tag=f.split('/')[-2][4:]
    m=re.match(r'(\w+?)_(async|sync|callback)_(old|new)_(\w+)_r(\d+)$',tag)
    t,api,v,mode,r=m.groups()
    x=json.load(open(f))['results'][0]
    chose=''; warm=''
    for l in x.get('auto_log',[]):
        if l.startswith('auto:') and ('Distributor/Push' in l or 'horaedb' in l.lower() or 'Write' in l) and 'chose' in l and ' 0 samples' not in l:
            chose=l.split(' chose ')[1].split(' (')[0]+' ('+l.split('(cost us ')[1].split(';')[0]+')'
        if l.startswith('settle:') and ' 0 samples' not in l:
            w=re.search(r'(\d+) warming',l); s=re.search(r'after (\d+) samples (\d+) calls ([\d.]+) s',l)
            warm=(w.group(1) if w else '-')+' warming, settled %s s'%s.group(3)
    rows.setdefault((t,api),[]).append((int(r),v,mode,x['server_cpu_us_per_call'],x['peak_rss_mib'],x['p99_us']/1000,chose,warm))
for k,v in rows.items():
    print('==',k)
    for r in sorted(v): print('  r%d %s %-5s %7.0f us %5.1f MiB p99 %6.2f  %s  %s'%r)
    for v_,mode in [('old','auto'),('new','auto'),('new','arena'),('new','reuse')]:
        c=[x[3] for x in v if x[1]==v_ and x[2]==mode]; rs=[x[4] for x in v if x[1]==v_ and x[2]==mode]
        if c: print('  median %s %s: %.0f us/call, peak RSS %.1f MiB (%d rounds)'%(v_,mode,st.median(c),st.median(rs),len(c)))
