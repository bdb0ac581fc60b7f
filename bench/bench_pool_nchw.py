#!/usr/bin/env python3
"""NCHW pools of the benchmark networks (bench/results-pool.md): `polydnn
pool` with two builds of the library, alternated, against ONNX Runtime's
pool kernel time (its profiler's kernel_time, without the Python call).

usage: bench_pool_nchw.py BEFORE_LIBDIR AFTER_LIBDIR  (run from the build
tree; each dir holds a libpolydnn.so.1, e.g. copies of .libs' before and
after a change). Needs onnx and onnxruntime (PYTHON_ONNX's Python)."""
import onnx, numpy as np, subprocess, re, os, sys, json, tempfile
from onnx import helper, TensorProto
import onnxruntime as ort
shapes=[ # C, H, win, stride, pad, ceil, mode, where
 (64,112,3,2,1,0,'max','ResNet stem'),(64,111,3,2,0,1,'max','SqueezeNet 1'),(128,55,3,2,0,1,'max','SqueezeNet 2'),(256,27,3,2,0,1,'max','SqueezeNet 3'),
 (192,56,3,2,0,1,'max','GoogLeNet 2'),(480,28,3,2,0,1,'max','GoogLeNet 3'),(832,14,2,2,0,1,'max','GoogLeNet 4'),
 (192,28,3,1,1,1,'max','GoogLeNet 3a branch'),(480,14,3,1,1,1,'max','GoogLeNet 4a branch'),(832,7,3,1,1,1,'max','GoogLeNet 5a branch'),
 (64,224,2,2,0,0,'max','VGG 1'),(512,28,2,2,0,0,'max','VGG 4'),
 (1000,13,13,1,0,0,'avg','SqueezeNet GAP'),(1280,7,7,1,0,0,'avg','MobileNetV2 GAP'),(2048,7,7,1,0,0,'avg','ResNet-50 GAP'),(1024,7,7,1,0,0,'avg','GoogLeNet GAP')]
def out(h,w,s,p,c): return (h+2*p-w+(s-1 if c else 0))//s+1
def ort_us(C,H,w,s,p,c,m):
    P=out(H,w,s,p,c)
    n=helper.make_node('MaxPool' if m=='max' else 'AveragePool',['x'],['y'],kernel_shape=[w,w],strides=[s,s],pads=[p]*4,ceil_mode=c)
    g=helper.make_graph([n],'g',[helper.make_tensor_value_info('x',TensorProto.FLOAT,[1,C,H,H])],[helper.make_tensor_value_info('y',TensorProto.FLOAT,[1,C,P,P])])
    mo=helper.make_model(g,opset_imports=[helper.make_opsetid('',13)]); mo.ir_version=8
    so=ort.SessionOptions(); so.intra_op_num_threads=2; so.enable_profiling=True
    so.profile_file_prefix=os.path.join(tempfile.gettempdir(),'pdnn_pool_ort')
    se=ort.InferenceSession(mo.SerializeToString(),so,providers=['CPUExecutionProvider'])
    x=np.random.randn(1,C,H,H).astype(np.float32)
    for _ in range(300): se.run(None,{'x':x})
    f=se.end_profiling()
    d=json.load(open(f))
    os.unlink(f)
    t=[e['dur'] for e in d if e.get('cat')=='Node' and e['name'].endswith('_kernel_time')][50:]
    return min(sorted(t)[:len(t)//2])  # best half: the kernel alone
def pd_ms(lib,C,H,w,s,p,c,m):
    a=['./.libs/polydnn','pool','-c',str(C),'-H',str(H),'-W',str(H),'-y',str(w),'-x',str(w),'-u',str(s),'-v',str(s),'-p',str(p),'-q',str(p),'-m',m,'--layout','NCHW','--iters','200']
    if c: a.append('--ceil-mode')
    o=subprocess.run(a,capture_output=True,text=True,env=dict(os.environ,LD_LIBRARY_PATH=lib)).stdout
    return float(re.search(r': ([0-9.]+) ms/call',o).group(1))
print('| pool | where | before ms | after ms | speedup | ORT kernel ms | after / ORT time |')
print('| --- | --- | ---: | ---: | ---: | ---: | ---: |')
for sh in shapes:
    C,H,w,s,p,c,m,where=sh
    b=min(pd_ms(sys.argv[1],*sh[:7]) for _ in range(3)); a=min(pd_ms(sys.argv[2],*sh[:7]) for _ in range(3))
    b=min(b,min(pd_ms(sys.argv[1],*sh[:7]) for _ in range(2))); a=min(a,min(pd_ms(sys.argv[2],*sh[:7]) for _ in range(2)))
    o=ort_us(*sh[:7])/1e3
    print('| %s %dx%d/%d pad %d%s c%d %dx%d | %s | %.3f | %.3f | %.2fx | %.3f | %.2f |'%(m,w,w,s,p,' ceil' if c else '',C,H,H,where,b,a,b/a,o,a/o),flush=True)
