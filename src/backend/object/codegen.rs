//! Lower, define and emit: a checked program → the bytes of an ELF object file, through the
//! JIT's own lowering into a position-independent `ObjectModule`.

use std::time::Instant;

use cranelift_codegen::ir::{self, UserFuncName};
use cranelift_codegen::isa::OwnedTargetIsa;
use cranelift_codegen::{Context, print_errors, verifier};
use cranelift_frontend::FunctionBuilderContext;
use cranelift_module::{DataDescription, DataId, FuncId, Linkage, Module, ModuleError};
use cranelift_object::object::write::SymbolSection;
use cranelift_object::{ObjectBuilder, ObjectModule, ObjectProduct};

use crate::backend::jit::compile::entry_args;
use crate::backend::jit::entry::{build_entry, entry_signature};
use crate::backend::jit::lower::{
    GlobalsBase, LowerEnv, ObjectsData, lower_function, script_signature,
};
use crate::backend::jit::{CompiledFunction, JitError, JitOptions, build_isa, declare_imports};
use crate::backend::jit::{epilogue, lower_unwind};
use crate::backend::objects::virtual_methods;
use crate::lang::hir::Program;

use super::{ObjectError, StageTimings};

// Symbol namespaces of a library (see "Symbols" in `mod.rs`): script functions are
// `hot.<name>` and `hot.<name>.entry`; hotlab's own data objects are `hot:<what>`. A script
// name never contains `:` (identifiers, `Class.method`, `<closure N in f>`, `<init>`), so no
// script function can take one of these names; imports are the executable's `hot_*` symbols.

/// The exported data object that holds the program's globals.
pub(super) const GLOBALS_SYMBOL: &str = "hot:globals";
/// The exported cell that holds the address of the program's objects (bound at load).
pub(super) const OBJECTS_SYMBOL: &str = "hot:objects";
/// The exported slot-offset table of the virtual methods (filled at load).
pub(super) const SLOT_TABLE_SYMBOL: &str = "hot:slot_offsets";

/// What the link and load stages need from code generation.
pub(super) struct Built {
    /// The object file.
    pub object: Vec<u8>,
    /// Script functions by HIR id (address and bytes filled in after loading).
    pub functions: Vec<CompiledFunction>,
    /// Their entry trampolines, by HIR id.
    pub entries: Vec<CompiledFunction>,
    /// First cell of each global.
    pub global_cells: Vec<u64>,
    /// Cells in the globals block.
    pub global_cells_total: usize,
    /// The largest explicit frame of any function (for the stack limit).
    pub largest_frame: usize,
    /// Cells in the slot-offset table.
    pub slot_table_len: usize,
}

/// A function lowered to CLIF, waiting to be defined.
struct Lowered {
    id: FuncId,
    name: String,
    symbol: String,
    func: ir::Function,
    lower_time: std::time::Duration,
}

fn setup(what: &str) -> impl Fn(ModuleError) -> JitError + '_ {
    move |e| JitError::Setup(format!("{what}: {e}"))
}

/// Symbol of script function `name` in the library: `hot.` then the name, a namespace of its
/// own (hotlab's data objects are `hot:`, imports `hot_`).
fn symbol(name: &str) -> String {
    debug_assert!(
        !name.contains(':'),
        "script name `{name}` in the internal namespace"
    );
    format!("hot.{name}")
}

/// The ISA every build starts from: position-independent code for this machine. Building it
/// costs 0.1–0.5 ms, so an `ObjectBackend` builds it once.
pub(super) fn pic_isa() -> Result<OwnedTargetIsa, JitError> {
    build_isa(true)
}

/// Build `program` into object-file bytes, adding the lower, define and emit times (module
/// setup counts as lowering).
pub(super) fn build(
    program: &Program,
    isa: OwnedTargetIsa,
    options: JitOptions,
    timings: &mut StageTimings,
) -> Result<Built, ObjectError> {
    let start = Instant::now();
    let call_conv = isa.default_call_conv();
    let mut builder = ObjectBuilder::new(isa, "hotlab", cranelift_module::default_libcall_names())
        .map_err(setup("object builder"))?;
    // `.eh_frame` in the object; the linker adds `.eh_frame_hdr`, which is how the unwinder
    // finds the frames of a `dlopen`ed library.
    builder.unwind_info(true);
    let mut module = ObjectModule::new(builder);
    let (hosts, helpers) = declare_imports(&mut module, call_conv)?;

    let (global_cells, total_cells) = crate::backend::jit::compile::global_layout(program)
        .map_err(crate::backend::jit::JitError::Init)?;
    // Zero cells are every type's zero value, which `<init>` overwrites, as in the JIT.
    let globals = zero_data(&mut module, GLOBALS_SYMBOL, total_cells as usize)?;

    // The objects cell and the slot table: zero here, bound by the loader once the program's
    // classes are installed (`ProgramObjects::bind_library`), before any code runs.
    let virtuals = virtual_methods(program);
    let slot_table_len = virtuals.len().max(1);
    let objects_data = ObjectsData {
        objects: zero_data(&mut module, OBJECTS_SYMBOL, 1)?,
        slot_table: zero_data(&mut module, SLOT_TABLE_SYMBOL, slot_table_len)?,
    };

    let mut funcs = Vec::with_capacity(program.functions.len());
    let mut entries = Vec::with_capacity(program.functions.len());
    for f in &program.functions {
        let sym = symbol(&f.name);
        funcs.push(
            module
                .declare_function(&sym, Linkage::Export, &script_signature(f, call_conv))
                .map_err(setup(&f.name))?,
        );
        entries.push(
            module
                .declare_function(
                    &format!("{sym}.entry"),
                    Linkage::Export,
                    &entry_signature(call_conv),
                )
                .map_err(setup(&f.name))?,
        );
    }
    let env = LowerEnv {
        program,
        funcs: &funcs,
        hosts: &hosts,
        helpers,
        globals: GlobalsBase::Data(globals),
        global_cells: &global_cells,
        checks: options.checks,
        call_conv,
        // Position-independent: found through `objects_data`, not baked-in addresses.
        objects_addr: 0,
        slot_table_addr: 0,
        virtuals: &virtuals,
        objects_data: Some(objects_data),
        counts_owner: None,
        fixed: false,
    };
    let mut fctx = FunctionBuilderContext::new();
    let mut lowered = Vec::with_capacity(program.functions.len() * 2);
    let mut largest_frame = 0u64;
    for (i, f) in program.functions.iter().enumerate() {
        let start = Instant::now();
        let mut func = ir::Function::with_name_signature(
            UserFuncName::user(0, funcs[i].as_u32()),
            script_signature(f, call_conv),
        );
        let slot_bytes = lower_function(&mut func, &mut fctx, &env, &mut module, i as u32)
            .map_err(|e| JitError::Lower {
                function: f.name.clone(),
                message: e.0,
            })?;
        largest_frame = largest_frame.max(slot_bytes);
        lowered.push(Lowered {
            id: funcs[i],
            name: f.name.clone(),
            symbol: symbol(&f.name),
            func,
            lower_time: start.elapsed(),
        });
    }
    {
        // As on the JIT, so the code stays the JIT's (`jit/opt_inline.rs`): at `Speed` small
        // callees inlined, at every level a function that calls itself unrolled by one level.
        let speed = options.opt == crate::backend::jit::OptLevel::Speed;
        let frame = crate::backend::jit::opt_inline::inline_small_functions(
            lowered.iter_mut().map(|l| (l.id, &mut l.func)),
            |_| speed,
            helpers.stack,
            helpers.array_heap,
        )
        .map_err(|(_, message)| JitError::Compile {
            function: String::from("(inlining)"),
            message,
        })?;
        largest_frame = largest_frame.max(frame);
    }
    // As on the JIT: a function that calls no script code needs no stack check.
    crate::backend::jit::opt_inline::drop_leaf_checks(
        lowered.iter_mut().map(|l| (l.id, &mut l.func)),
        helpers.stack,
    );
    // As on the JIT: decided branches folded, then cold targets first.
    for l in &mut lowered {
        crate::backend::jit::opt_cfg::shape_branches(&mut l.func);
    }
    for (i, f) in program.functions.iter().enumerate() {
        let start = Instant::now();
        let mut func = ir::Function::with_name_signature(
            UserFuncName::user(0, entries[i].as_u32()),
            entry_signature(call_conv),
        );
        build_entry(&mut func, &mut fctx, &mut module, funcs[i], &entry_args(f));
        lowered.push(Lowered {
            id: entries[i],
            name: format!("{}.entry", f.name),
            symbol: format!("{}.entry", symbol(&f.name)),
            func,
            lower_time: start.elapsed(),
        });
    }
    timings.lower = start.elapsed();

    let start = Instant::now();
    let mut ctx = module.make_context();
    let mut compiled = Vec::with_capacity(lowered.len());
    let mut restores = Vec::with_capacity(lowered.len());
    for l in lowered {
        let id = l.id;
        let (function, dead) = define(&mut module, &mut ctx, l, options.verify)?;
        compiled.push(function);
        restores.push((id, dead));
    }
    timings.define = start.elapsed();

    let start = Instant::now();
    let mut product = module.finish();
    drop_dead_restores(&mut product, &restores);
    let object = product
        .emit()
        .map_err(|e| ObjectError::Emit(e.to_string()))?;
    timings.emit = start.elapsed();

    let entry_code = compiled.split_off(program.functions.len());
    Ok(Built {
        object,
        functions: compiled,
        entries: entry_code,
        global_cells,
        global_cells_total: total_cells as usize,
        largest_frame: largest_frame as usize,
        slot_table_len,
    })
}

/// Declare and define an exported, writable, zero-filled data object of `cells` 8-byte cells.
fn zero_data(module: &mut ObjectModule, symbol: &str, cells: usize) -> Result<DataId, JitError> {
    let id = module
        .declare_data(symbol, Linkage::Export, true, false)
        .map_err(setup(symbol))?;
    let mut data = DataDescription::new();
    data.define_zeroinit(cells * 8);
    data.set_align(8);
    module.define_data(id, &data).map_err(setup(symbol))?;
    Ok(id)
}

/// As the JIT does (`jit/epilogue.rs`): the nop over each dead `mov rsp, rbp` of the
/// functions' code, written into the object's text where `ObjectModule` placed each function
/// (after it wrote the unwind tables from the same offsets, which the rewrite keeps).
fn drop_dead_restores(product: &mut ObjectProduct, restores: &[(FuncId, Vec<u32>)]) {
    for (id, offsets) in restores {
        if offsets.is_empty() {
            continue;
        }
        let Some((symbol, true)) = product.functions[*id] else {
            continue;
        };
        let symbol = product.object.symbol(symbol);
        let SymbolSection::Section(section) = symbol.section else {
            continue;
        };
        let (start, size) = (symbol.value as usize, symbol.size as usize);
        let data = product.object.section_mut(section).data_mut();
        if let Some(code) = data.get_mut(start..start + size) {
            let done = epilogue::rewrite(code, offsets);
            debug_assert_eq!(
                done,
                offsets.len(),
                "a dead restore was not where it was found"
            );
        }
    }
}

/// Define one lowered function; with it, the offsets of its dead frame restores
/// ([`epilogue::dead_restores_of`]).
fn define(
    module: &mut ObjectModule,
    ctx: &mut Context,
    l: Lowered,
    verify: bool,
) -> Result<(CompiledFunction, Vec<u32>), JitError> {
    let start = Instant::now();
    ctx.func = l.func;
    let clif = ctx.func.display().to_string();
    let compile_err = |message: String| JitError::Compile {
        function: l.name.clone(),
        message,
    };
    if verify && let Err(errors) = verifier::verify_function(&ctx.func, module.isa()) {
        let message = print_errors::pretty_verifier_error(&ctx.func, None, errors);
        module.clear_context(ctx);
        return Err(JitError::Verifier {
            function: l.name.clone(),
            message,
        });
    }
    let result = module.define_function(l.id, ctx).map_err(|e| match e {
        ModuleError::Compilation(err) => compile_err(print_errors::pretty_error(&ctx.func, err)),
        other => compile_err(other.to_string()),
    });
    let size = ctx.compiled_code().map(|c| c.code_buffer().len());
    let dead = ctx
        .compiled_code()
        .filter(|_| module.isa().name() == "x64")
        .map(epilogue::dead_restores_of)
        .unwrap_or_default();
    let frame_map = ctx
        .compiled_code()
        .map(|c| {
            lower_unwind::frame_map(&c.buffer)
                .with_origin(&l.name, lower_unwind::source_locs(&c.buffer))
        })
        .unwrap_or_default();
    module.clear_context(ctx);
    result?;
    let size = size.ok_or_else(|| compile_err("no compiled code after define".into()))?;
    Ok((
        CompiledFunction {
            name: l.name,
            symbol: l.symbol,
            addr: 0,
            size,
            bytes: Vec::new(),
            clif,
            vcode: None,
            lower_time: l.lower_time,
            compile_time: start.elapsed(),
            frame_map: std::sync::Arc::new(frame_map),
        },
        dead,
    ))
}
