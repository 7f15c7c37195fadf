"""paddle_rnn_check.py -- a cross-check, run by hand where PaddlePaddle is installed (not by make
check): the reference of tests/vm/ops/test_kern_rnn_op.c (Paddle's equations, the weights in
WeightList's order, the reverse direction from T - 1, states kept past a sequence's length,
zeros output there), transcribed to numpy, against paddle.nn.LSTM and paddle.nn.GRU (2 layers,
bidirectional, time-major, sequence lengths 3, 1, 2, 0) in float64. Prints the largest
differences of Out and of the final states (1e-16 with Paddle 3.x on the CPU).
Usage: python paddle_rnn_check.py"""
import numpy as np, paddle
np.random.seed(0)
T,N,I,H,L=3,4,2,2,2
lens=np.array([3,1,2,0],dtype=np.int32)
def sig(v): return 1/(1+np.exp(-v))
for mode in ["LSTM","GRU"]:
    cls = paddle.nn.LSTM if mode=="LSTM" else paddle.nn.GRU
    x = np.random.uniform(-1.5,1.5,(T,N,I)).astype("float64")
    h0 = np.random.uniform(-.8,.8,(L*2,N,H)); c0=np.random.uniform(-.8,.8,(L*2,N,H))
    paddle.set_default_dtype("float64")
    net = cls(I,H,num_layers=L,direction="bidirect",time_major=True)
    plist = [p.numpy() for p in net.parameters()]  # per cell: w_ih, w_hh, b_ih, b_hh
    init = (paddle.to_tensor(h0), paddle.to_tensor(c0)) if mode=="LSTM" else paddle.to_tensor(h0)
    y, st = net(paddle.to_tensor(x), init, sequence_length=paddle.to_tensor(lens))
    # reference (the C test's)
    G = 4 if mode=="LSTM" else 3
    xin = x.copy()
    hT = np.zeros((L*2,N,H)); cT=np.zeros((L*2,N,H))
    for l in range(L):
        yout = np.zeros((T,N,2*H))
        for d in range(2):
            c = l*2+d
            wih,whh,bih,bhh = plist[4*c:4*c+4]
            for n in range(N):
                h = h0[c,n].copy(); cc = c0[c,n].copy()
                for s in range(T):
                    t = T-1-s if d else s
                    if t >= lens[n]: continue
                    gx = wih@xin[t,n]+bih; gh = whh@h+bhh
                    if mode=="LSTM":
                        i,f,g,o = sig(gx[:H]+gh[:H]), sig(gx[H:2*H]+gh[H:2*H]), np.tanh(gx[2*H:3*H]+gh[2*H:3*H]), sig(gx[3*H:]+gh[3*H:])
                        cc = f*cc+i*g; h = o*np.tanh(cc)
                    else:
                        r,z = sig(gx[:H]+gh[:H]), sig(gx[H:2*H]+gh[H:2*H]); nn=np.tanh(gx[2*H:]+r*gh[2*H:])
                        h=(1-z)*nn+z*h
                    yout[t,n,d*H:(d+1)*H]=h
                hT[c,n]=h; cT[c,n]=cc
        xin = yout
    hs = st[0].numpy() if mode=="LSTM" else st.numpy()
    print(mode, "out maxdiff", np.abs(y.numpy()-xin).max(), "h maxdiff", np.abs(hs-hT).max(),
          "c maxdiff", np.abs(st[1].numpy()-cT).max() if mode=="LSTM" else "")
