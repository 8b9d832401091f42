#ifndef COLO_EXEC_OPS
#define COLO_EXEC_OPS

include "colo/Dialect/Exec/ExecBase.td"
include "mlir/IR/SymbolInterfaces.td"
include "mlir/IR/RegionKindInterface.td"
include "mlir/Interfaces/SideEffectInterfaces.td"

def Exec_Buffer : Res<AnyStaticShapeMemRef, "", []>;
def Exec_Read : Arg<AnyStaticShapeMemRef, "read", [MemRead]>;
def Exec_Written : Arg<AnyStaticShapeMemRef, "written", [MemWrite]>;
def Exec_ReadWritten : Arg<AnyStaticShapeMemRef, "read and written", [MemRead, MemWrite]>;

//===----------------------------------------------------------------------===//
// Programs and buffers
//===----------------------------------------------------------------------===//

def Exec_ProgramOp : Exec_Op<"program", [Symbol, IsolatedFromAbove, SingleBlock,
    NoRegionArguments]> {
  let summary = "One rank's training step";
  let description = [{
    The body runs in order, once per training step, and ends with
    `exec.return` of the buffers printed after each step (the loss first).
    `mesh_shape` and `mesh_axes` give the ranks' grid (the program is the
    same for every rank of it, or, with `stage`, for every rank of one
    pipeline stage); `batch_axis` is the mesh axis that splits the batch.
    `arena_bytes` and `host_arena_bytes` (the temporaries of steps that run
    on the host, such as an offloaded optimizer's) are set by
    `colo-plan-memory`.

    ```mlir
    exec.program @train_step attributes {mesh_shape = array<i64: 2>, mesh_axes = ["dp"], batch_axis = 0 : i32} {
      %x = exec.buffer "x" input : memref<4x8xf32, #exec.space<device>>
      ...
      exec.return %loss : memref<f32, #exec.space<device>>
    }
    ```
  }];
  let arguments = (ins SymbolNameAttr:$sym_name,
                       OptionalAttr<DenseI64ArrayAttr>:$mesh_shape,
                       OptionalAttr<StrArrayAttr>:$mesh_axes,
                       OptionalAttr<I32Attr>:$batch_axis,
                       OptionalAttr<I64Attr>:$stage,
                       OptionalAttr<I64Attr>:$arena_bytes,
                       OptionalAttr<I64Attr>:$host_arena_bytes);
  let regions = (region SizedRegion<1>:$body);
  let assemblyFormat = "$sym_name attr-dict-with-keyword $body";
  let hasRegionVerifier = 1;
  let extraClassDeclaration = [{
    ::mlir::Block &getBlock() { return getBody().front(); }
  }];
}

def Exec_ReturnOp : Exec_Op<"return", [Terminator, HasParent<"ProgramOp">]> {
  let summary = "The buffers reported after each step";
  let arguments = (ins Variadic<AnyStaticShapeMemRef>:$reported);
  let assemblyFormat = "($reported^ `:` type($reported))? attr-dict";
}

def Exec_BufferOp : Exec_Op<"buffer"> {
  let summary = "A tensor's storage in a memory space";
  let description = [{
    `temp` buffers are scratch inside one step (`colo-plan-memory` gives
    each an `offset` in the arena of its memory space, device or host); `state` buffers persist across steps (named
    after their global; `param_name` marks a model weight by its PyTorch
    name, `shard` the block of a larger tensor, `step_counter` the step
    count Adam reads); `input` buffers are filled by the data source
    (`int_max`: the exclusive bound of integer values; `int_ignored`: one
    value outside it that is valid too, the loss's ignore_index); `constant` buffers
    are state that the program never writes. The type's memory space says
    where the bytes live.

    ```mlir
    %w = exec.buffer "fc.weight" state {param_name = "fc.weight"} : memref<10x64xf32, #exec.space<device>>
    ```
  }];
  let arguments = (ins StrAttr:$name, Exec_BufferKindAttr:$kind,
                       OptionalAttr<I64Attr>:$offset, OptionalAttr<I64Attr>:$int_max,
                       OptionalAttr<I64Attr>:$int_ignored,
                       OptionalAttr<Exec_ShardAttr>:$shard,
                       OptionalAttr<StrAttr>:$param_name, UnitAttr:$step_counter);
  let results = (outs Exec_Buffer:$result);
  let assemblyFormat = "$name $kind attr-dict `:` type($result)";
  let hasVerifier = 1;
}

def Exec_ViewOp : Exec_Op<"view", [Pure]> {
  let summary = "Another shape or element type of a buffer's bytes";
  let description = [{
    A reshape that moves nothing: the result is a view of `source`, which is
    an `exec.buffer` (views of views name the storage directly), in the same
    memory space and no larger.

    ```mlir
    %v = exec.view %b "fc.reshape.4" : memref<4x8xf32, #exec.space<device>> to memref<32xf32, #exec.space<device>>
    ```
  }];
  let arguments = (ins AnyStaticShapeMemRef:$source, StrAttr:$name);
  let results = (outs AnyStaticShapeMemRef:$result);
  let assemblyFormat = "$source $name attr-dict `:` type($source) `to` type($result)";
  let hasVerifier = 1;
}

def Exec_FreeOp : Exec_Op<"free"> {
  let summary = "The end of a temporary buffer's lifetime";
  let description = [{
    No later step touches the buffer or a view of it; its bytes may hold
    another buffer from here on. Placed by `colo-insert-frees`.
  }];
  let arguments = (ins Arg<AnyStaticShapeMemRef, "freed", [MemFree]>:$buffer);
  let assemblyFormat = "$buffer attr-dict `:` type($buffer)";
}

//===----------------------------------------------------------------------===//
// Computation
//===----------------------------------------------------------------------===//

def Exec_KernelOp : Exec_Op<"kernel", [AttrSizedOperandSegments]> {
  let summary = "A call of a generated kernel";
  let description = [{
    Calls `callee` in the kernels library with the inputs' and then the
    outputs' data pointers. With `pieces` > 1 the kernel computes one of
    `pieces` equal parts of its outputs per call, and piece p of argument i
    starts `piece_bytes[i] * p` bytes in (0: every piece reads it whole).

    ```mlir
    exec.kernel @k3_add "fc.add.7" ins(%a, %b : memref<4x8xf32, #exec.space<device>>, memref<8xf32, #exec.space<device>>) outs(%c : memref<4x8xf32, #exec.space<device>>)
    ```
  }];
  let arguments = (ins FlatSymbolRefAttr:$callee, StrAttr:$name,
                       Arg<Variadic<AnyStaticShapeMemRef>, "read", [MemRead]>:$inputs,
                       Arg<Variadic<AnyStaticShapeMemRef>, "written", [MemWrite]>:$outputs,
                       OptionalAttr<I64Attr>:$pieces,
                       OptionalAttr<DenseI64ArrayAttr>:$piece_bytes);
  let assemblyFormat = [{
    $callee $name (`ins` `(` $inputs^ `:` type($inputs) `)`)?
    `outs` `(` $outputs `:` type($outputs) `)` attr-dict
  }];
  let hasVerifier = 1;
}

def Exec_GemmOp : Exec_Op<"gemm", [AttrSizedOperandSegments]> {
  let summary = "A batched matrix product by the vendor library";
  let description = [{
    `for i < batch: C_i = alpha * op(A_i) * op(B_i) + beta * C_i` with the
    leading dimensions, batch strides, the outer batch and the bias and
    residual epilogues of Program.proto's `Gemm` (unset attributes are 0,
    which the runtime reads as the packed layout or one product).

    ```mlir
    exec.gemm "fc.matmul.3" %x, %w -> %y {m = 4 : i64, n = 10 : i64, k = 64 : i64, trans_b} : memref<4x64xf32, #exec.space<device>>, memref<10x64xf32, #exec.space<device>>, memref<4x10xf32, #exec.space<device>>
    ```
  }];
  let arguments = (ins StrAttr:$name, Exec_Read:$a, Exec_Read:$b,
      Arg<Optional<AnyStaticShapeMemRef>, "read", [MemRead]>:$bias,
      Arg<Optional<AnyStaticShapeMemRef>, "read", [MemRead]>:$residual, Exec_ReadWritten:$c,
      UnitAttr:$trans_a, UnitAttr:$trans_b, I64Attr:$m, I64Attr:$n, I64Attr:$k,
      OptionalAttr<I64Attr>:$batch, OptionalAttr<I64Attr>:$lda,
      OptionalAttr<I64Attr>:$ldb, OptionalAttr<I64Attr>:$ldc,
      OptionalAttr<I64Attr>:$stride_a, OptionalAttr<I64Attr>:$stride_b,
      OptionalAttr<I64Attr>:$stride_c, OptionalAttr<I64Attr>:$batch_outer,
      OptionalAttr<I64Attr>:$outer_stride_a, OptionalAttr<I64Attr>:$outer_stride_b,
      OptionalAttr<I64Attr>:$outer_stride_c, OptionalAttr<F64Attr>:$alpha,
      OptionalAttr<F64Attr>:$beta);
  let assemblyFormat = [{
    $name $a `,` $b (`bias` $bias^)? (`residual` $residual^)? `->` $c attr-dict `:`
    type(operands)
  }];
}

def Exec_Conv2dOp : Exec_Op<"conv2d"> {
  let summary = "A 2-D convolution, or one of its gradients, by the vendor library";
  let description = [{
    PyTorch's conv2d on NCHW activations and OIHW weights (Program.proto's
    `Conv2d`): `forward` reads `x`, `weight` and the optional `bias` and
    writes `y`; `backward_data` reads `y` (the output's gradient) and
    `weight` and writes `x`; `backward_weights` reads `x` and `y` and writes
    `weight`. The geometry is `[n, c, h, w]` in, `k` filters of `r x s`, and
    `[oh, ow]` out.
  }];
  let arguments = (ins StrAttr:$name, Exec_ConvModeAttr:$mode,
      AnyStaticShapeMemRef:$x, AnyStaticShapeMemRef:$weight,
      Optional<AnyStaticShapeMemRef>:$bias, AnyStaticShapeMemRef:$y,
      DenseI64ArrayAttr:$input_shape, I64Attr:$k, DenseI64ArrayAttr:$window,
      DenseI64ArrayAttr:$output_size, DenseI64ArrayAttr:$strides,
      DenseI64ArrayAttr:$padding, DenseI64ArrayAttr:$dilations, I64Attr:$groups);
  let assemblyFormat = [{
    $mode $name `x` `(` $x `)` `weight` `(` $weight `)` (`bias` `(` $bias^ `)`)?
    `y` `(` $y `)` attr-dict `:` type(operands)
  }];
  let hasVerifier = 1;
}

def Exec_Pool2dOp : Exec_Op<"pool2d", [AttrSizedOperandSegments]> {
  let summary = "2-D max or average pooling, or its gradient";
  let description = [{
    PyTorch's max_pool2d / avg_pool2d on NCHW (Program.proto's `Pool2d`):
    forward modes read `x` and write `y`; `max_backward` reads `x` and `dy`
    and writes `dx`; `avg_backward` reads `dy` and writes `dx`.
  }];
  let arguments = (ins StrAttr:$name, Exec_PoolModeAttr:$mode,
      Optional<AnyStaticShapeMemRef>:$x, Optional<AnyStaticShapeMemRef>:$y,
      Optional<AnyStaticShapeMemRef>:$dx, Optional<AnyStaticShapeMemRef>:$dy,
      DenseI64ArrayAttr:$input_shape, DenseI64ArrayAttr:$window,
      DenseI64ArrayAttr:$output_size, DenseI64ArrayAttr:$strides,
      DenseI64ArrayAttr:$padding, DenseI64ArrayAttr:$dilations, UnitAttr:$count_include_pad);
  let assemblyFormat = [{
    $mode $name (`x` `(` $x^ `:` type($x) `)`)? (`y` `(` $y^ `:` type($y) `)`)?
    (`dx` `(` $dx^ `:` type($dx) `)`)? (`dy` `(` $dy^ `:` type($dy) `)`)? attr-dict
  }];
  let hasVerifier = 1;
}

def Exec_CopyOp : Exec_Op<"copy"> {
  let summary = "Bytes from one buffer to another, in any memory spaces";
  let description = [{
    `dst = src` byte for byte; the two have the same byte size.

    ```mlir
    exec.copy "fc.weight.global_store.9" %new -> %w : memref<10x64xf32, #exec.space<device>>, memref<10x64xf32, #exec.space<device>>
    ```
  }];
  let arguments = (ins StrAttr:$name, Exec_Read:$src, Exec_Written:$dst);
  let assemblyFormat = "$name $src `->` $dst attr-dict `:` type($src) `,` type($dst)";
  let hasVerifier = 1;
}

//===----------------------------------------------------------------------===//
// Communication
//===----------------------------------------------------------------------===//

class Exec_CommOp<string mnemonic, list<Trait> traits = []>
    : Exec_Op<mnemonic, traits> {
  let results = (outs Exec_TokenType:$token);
}

class Exec_GroupOp<string mnemonic, dag extraArgs, string extraFormat>
    : Exec_CommOp<mnemonic> {
  let summary = "A collective among the ranks of one mesh group";
  let arguments = !con((ins StrAttr:$name, Exec_Read:$input, Exec_Written:$output,
                            DenseI32ArrayAttr:$mesh_axes), extraArgs);
  let assemblyFormat = extraFormat # [{ $name $input `->` $output `over` $mesh_axes
    attr-dict `:` type($input) `,` type($output) }];
}

def Exec_AllReduceOp : Exec_GroupOp<"all_reduce", (ins Exec_ReductionAttr:$reduction),
                                    "$reduction"> {
  let description = [{
    `output` = the reduction of every member's `input` (the same buffer
    for an in-place reduction). The group is the ranks whose mesh
    coordinates differ only along `mesh_axes`.

    ```mlir
    %t = exec.all_reduce average "grads.bucket.0" %g -> %g over [0] : memref<1024xf32, #exec.space<device>>, memref<1024xf32, #exec.space<device>>
    exec.wait %t "grads.bucket.0.wait"
    ```
  }];
}
def Exec_AllGatherOp : Exec_GroupOp<"all_gather", (ins), ""> {
  let description = "`output` = the members' inputs concatenated in group order.";
}
def Exec_ReduceScatterOp : Exec_GroupOp<"reduce_scatter", (ins Exec_ReductionAttr:$reduction),
                                        "$reduction"> {
  let description = [{
    `input` is group-size equal blocks; member i's `output` is the reduction
    of every member's block i.
  }];
}
def Exec_AllToAllOp : Exec_GroupOp<"all_to_all", (ins), ""> {
  let description = [{
    `input` is group-size equal blocks; block j goes to member j, whose
    `output` holds in block i what member i sent it.
  }];
}
def Exec_ShiftOp : Exec_GroupOp<"shift", (ins I64Attr:$offset, I32Attr:$tag),
                                "`by` $offset `tag` $tag"> {
  let description = [{
    Around the group's ring: member i sends `input` to member
    (i + offset) mod size and receives into `output` what member
    (i - offset) mod size sent, in a message tagged `tag` (ring attention's
    key and value blocks).
  }];
}
def Exec_BroadcastOp : Exec_GroupOp<"broadcast", (ins I64Attr:$root), "`from` $root"> {
  let description = [{
    Every member's `output` = member `root`'s `input` (2-D tensor
    parallelism's SUMMA steps).
  }];
}
def Exec_ReduceOp : Exec_GroupOp<"reduce", (ins Exec_ReductionAttr:$reduction, I64Attr:$root),
                                 "$reduction `to` $root"> {
  let description = [{
    Member `root`'s `output` = the reduction of every member's `input`; the
    other members' outputs are zero (the adjoint of a broadcast, whose
    other members' inputs are read by no one).
  }];
}
def Exec_AllSliceOp : Exec_GroupOp<"all_slice", (ins), ""> {
  let description = [{
    No communication: member i's `output` is block i of its `input`.
  }];
}

def Exec_SendOp : Exec_CommOp<"send"> {
  let summary = "A message to another member of a mesh group";
  let description = [{
    `input` goes to member `peer` of the group along `mesh_axes` (one axis),
    which receives it with an `exec.recv` of the same `tag`.
  }];
  let arguments = (ins StrAttr:$name, Exec_Read:$input, DenseI32ArrayAttr:$mesh_axes,
                       I64Attr:$peer, I32Attr:$tag);
  let assemblyFormat = [{
    $name $input `to` $peer `over` $mesh_axes `tag` $tag attr-dict `:` type($input)
  }];
}

def Exec_RecvOp : Exec_CommOp<"recv"> {
  let summary = "A message from another member of a mesh group";
  let description = "`output` = the `input` of member `peer`'s `exec.send` with this tag.";
  let arguments = (ins StrAttr:$name, Exec_Written:$output, DenseI32ArrayAttr:$mesh_axes,
                       I64Attr:$peer, I32Attr:$tag);
  let assemblyFormat = [{
    $name $output `from` $peer `over` $mesh_axes `tag` $tag attr-dict `:` type($output)
  }];
}

def Exec_TransferOp : Exec_CommOp<"transfer"> {
  let summary = "Bytes from one memory space to another, on the copy queue";
  let description = [{
    `dst = src` byte for byte, between two memory spaces (device and host),
    on the device's copy queue: it starts once the steps before it have run
    and proceeds beside the steps after it, until the `exec.wait` of its
    token. Until the wait no step reads or writes `dst`, nor writes `src`.

    ```mlir
    %t = exec.transfer "fc.weight.grad.to_host" %g -> %gh : memref<64xf32, #exec.space<device>>, memref<64xf32, #exec.space<host>>
    exec.wait %t "fc.weight.grad.to_host.wait"
    ```
  }];
  let arguments = (ins StrAttr:$name, Exec_Read:$src, Exec_Written:$dst);
  let assemblyFormat = "$name $src `->` $dst attr-dict `:` type($src) `,` type($dst)";
  let hasVerifier = 1;
}

def Exec_WaitOp : Exec_Op<"wait"> {
  let summary = "Finishes the communication or transfer of a token";
  let description = [{
    After it the collective's output, or the transfer's destination, holds
    its result. A wait right after
    its collective (no step between) makes the collective synchronous; one
    that `colo-overlap-collectives` moved later lets the steps between run
    while it progresses.
  }];
  let arguments = (ins Exec_TokenType:$token, StrAttr:$name);
  let assemblyFormat = "$token $name attr-dict";
}

#endif // COLO_EXEC_OPS
