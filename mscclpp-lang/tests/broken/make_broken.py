import json, copy, os
C='tests/corpus/mscclpp/'
OUT='mscclpp-lang/tests/broken/'
def load(f): return json.load(open(C+f))
def ops(p, r, t): return p['gpus'][r]['threadblocks'][t]['ops']
fixtures=[]
def save(name, kind, what, p):
    p['name']=name
    json.dump(p, open(OUT+name+'.json','w'), indent=1)
    fixtures.append((name, kind, what))

# 1 missing wait
p=load('generated/single_node__allgather__n2.json')
o=ops(p,0,0); assert o[8]['name']=='wait'; del o[8]
save('missing_wait','data_race','rank 0 drops the closing `wait`: rank 1\'s put into rank 0\'s output is not ordered before rank 0\'s launch ends',p)

# 2 wrong offset (copy from the wrong chunk of the input)
p=load('generated/alltoall__alltoall_ring_oop__n2.json')
o=ops(p,0,0); assert o[8]['name']=='copy'; o[8]['src_buff'][0]['index']=1
save('wrong_offset','wrong_result','rank 0 copies input chunk 1 instead of chunk 0 into output chunk 0',p)

# 3 signal on the wrong channel
p=load('generated/single_node__allreduce__n4.json')
o=ops(p,0,0)
idx=[i for i,x in enumerate(o) if x['name']=='signal'][-1]
o[idx]['channel_ids']=[0,1,1]
save('signal_wrong_channel','deadlock','rank 0 thread block 0 signals its channel to rank 2 twice and never its channel to rank 3',p)

# 4 missing nop between a put and the signal that publishes it
p=load('generated/single_node__allgather__n2.json')
o=ops(p,0,0); assert o[6]['name']=='nop' and o[5]['name']=='put'; del o[6]
save('missing_nop_before_signal','data_race','rank 0 signals right after its put without a `nop`: only thread 0\'s share of the put is released',p)

# 5 missing nop between dependent data operations of one thread block
p=load('upstream/executor-tests__execution-plans__reduce.json')
found=False
for t,tb in enumerate(p['gpus'][1]['threadblocks']):
    o=tb['ops']
    for i in range(len(o)-2):
        if o[i]['name']=='rre' and o[i+1]['name']=='nop' and o[i+2]['name']=='copy':
            del o[i+1]; found=True; break
    if found: break
assert found
save('missing_nop_between_ops','data_race','rank 1 copies the chunk its `rre` just wrote without a `nop` in between',p)

# 6 no double buffering of the packet scratch
p=load('generated/single_node__allgather_pkt__n2.json')
p['use_double_scratch_buffer']=False
save('packets_single_buffered','data_race|deadlock','LL allgather without double scratch: a rank\'s next launch overwrites packets its peer has not read yet',p)

# 7 unbalanced semaphore: released, never acquired
p=load('generated/single_node__allreduce_pipeline__n2.json')
for g in p['gpus']:
    g['semaphores'].append({'init_value':0})
    s=len(g['semaphores'])-1
    g['threadblocks'][0]['ops'].append({'name':'sem_release','semaphore_ids':[s]})
save('unbalanced_semaphore','unbalanced','thread block 0 releases a semaphore that nobody acquires',p)

# 8 unbalanced signal: one extra signal at the end of the kernel
p=load('generated/single_node__allgather_tbg__n2.json')
for g in p['gpus']:
    tb=g['threadblocks'][0]
    mem=[c for c in tb['channels'] if c['channel_type']=='memory']
    tb['ops'].append({'name':'signal','channel_ids':[0],'channel_type':'memory'})
save('unbalanced_signal','unbalanced','every rank signals once more than its peer waits',p)

# 9 out of bounds chunk
p=load('generated/single_node__allgather__n2.json')
o=ops(p,0,0); o[5]['dst_buff'][0]['index']=2
save('out_of_bounds','out_of_bounds','rank 0 puts into chunk 2 of a 2-chunk output',p)

# 10 stale packet: a second writer with the same flag into one slot
p=load('generated/single_node__allgather_pkt__n4.json')
g=p['gpus'][1]
# find a ppkt op of rank 1 and duplicate it with the source of another chunk into the same destination
done=False
for tb in g['threadblocks']:
    for i,x in enumerate(tb['ops']):
        if x['name']=='ppkt':
            y=copy.deepcopy(x); y['src_buff'][0]['index']=(y['src_buff'][0]['index']+1)%4
            tb['ops'].insert(i+1,y); done=True; break
    if done: break
assert done
save('stale_packet','stale_packet','rank 1 sends two different packets with the same flag into one scratch slot of a peer',p)

# 11 missing signal -> deadlock
p=load('generated/single_node__allgather__n2.json')
o=ops(p,1,0); assert o[7]['name']=='signal'; del o[7]
save('missing_signal','deadlock','rank 1 drops its closing `signal`: rank 0 waits forever',p)

# 12 relaxed closing handshake: writes are not published
p=load('generated/single_node__allgather__n2.json')
for r in range(2):
    o=ops(p,r,0); o[7]['name']='rlxsignal'; o[8]['name']='rlxwait'
save('relaxed_closing_handshake','data_race','the signal/wait after the put is relaxed, which orders execution but does not publish the put',p)

# 13 missing barrier between thread blocks of one rank
p=load('generated/single_node__allgather_tbg__n2.json')
for g in p['gpus']:
    for tb in g['threadblocks']:
        tb['ops']=[x for x in tb['ops'] if x['name']!='barrier']
save('missing_barrier','data_race','the barriers between the thread-block group and the signalling block are removed',p)

# 14 wrong reduction operator in one operation
p=load('generated/single_node__allreduce_pkt__n2.json')
o=ops(p,1,1); assert o[0]['name']=='respkt'; o[0]['reduce_op']='max'
save('wrong_reduce_op','wrong_result','one packet reduction of rank 1 takes the maximum instead of the sum',p)

# 15 port put without flush, then the source is overwritten
p=load('generated/unit__put_with_signal_and_flush_test__n2.json')
for g in p['gpus']:
    for x in g['threadblocks'][0]['ops']:
        if x['name']=='pwsf': x['name']='pws'
save('port_put_without_flush','data_race','`pwsf` becomes `pws`: the proxy may still read the source when the next launch refills it',p)

# 16 packets read from a slot nobody writes in this launch
p=load('generated/single_node__allgather_pkt__n2.json')
o=ops(p,0,1); assert o[0]['name']=='upkt'; o[0]['src_buff'][0]['index']=0
save('packet_wrong_slot','deadlock','rank 0 unpacks scratch slot 0, which its peer never fills (it fills slot 1)',p)

with open(OUT+'MANIFEST.tsv','w') as f:
    f.write('plan\texpected\twhat\n')
    for n,k,w in fixtures: f.write(f'{n}\t{k}\t{w}\n')
print(len(fixtures))
