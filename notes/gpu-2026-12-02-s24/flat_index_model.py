# Session 24: a host model of flat_probe.cu's index logic (which elements each emitted group
# chains, in which order): every (row, group) of a tile emitted once, its elements in column
# order, for D = 9-79 and the product widths at every lead. Run: python3 flat_index_model.py
import random
def sim(D, k, nrows, lead):
    ne = nrows*D
    nvec = (lead+ne+7)//8
    magic = (1<<32)//D + 1
    emits = {}
    carry = {}
    def place(j):
        rel = 8*j - lead
        row_lo = ((rel*magic)>>32) if rel >= 0 else -1
        assert rel < 0 or row_lo == rel//D
        col_lo = rel - row_lo*D
        b = D - col_lo
        s = (-col_lo) & 7
        s = s if s < b else 8
        return rel,row_lo,col_lo,b,s
    def elem_id(j,e):
        rel,row_lo,col_lo,b,s = place(j)
        c = col_lo+e
        row = row_lo + (1 if c >= D else 0)
        col = c - D if c >= D else c
        return (row,col)
    # pass a
    for j in range(nvec):
        rel,row_lo,col_lo,b,s = place(j)
        end_a = (b-1 if b <= 8 else (7 if s == 0 else -1)) if s < 8 else -1
        acc = []
        emit = None
        for e in range(8):
            st = (e == s or e == b)
            acc = [elem_id(j,e)] if st else acc + [elem_id(j,e)]
            if e == end_a: emit = list(acc)
        if end_a >= 0 and 0 <= row_lo < nrows:
            key = (row_lo, (col_lo+s)>>3)
            assert key not in emits, ("dup a", key)
            emits[key] = emit
        carry[j] = acc
    for j in range(nvec):
        rel,row_lo,col_lo,b,s = place(j)
        first = min(s,b)
        acc = list(carry[j-1]) if j > 0 else []
        for e in range(8):
            if e < first: acc = acc + [elem_id(j,e)]
        if first > 0 and 0 <= row_lo < nrows:
            key = (row_lo, col_lo>>3)
            assert key not in emits, ("dup b", key, j)
            emits[key] = acc
    G = (D+7)//8
    for r in range(nrows):
        for g in range(G):
            exp = [(r,c) for c in range(8*g, min(D,8*g+8))]
            assert emits.get((r,g)) == exp, (D,lead,r,g,emits.get((r,g)),exp)
    assert len(emits) == nrows*G
for D in list(range(9,80)) + [513,1025,1537,2049,4097,8191,1024,1032]:
    k = max(1, (8192-8)//D)
    for lead in range(8):
        for nrows in {1,2,k}:
            sim(D,k,nrows,lead)
print("ok")
