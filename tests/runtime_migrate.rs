//! Migration as a property: for any old and new layout, every field with the same name and type
//! keeps its value, every other field holds its initializer, handles in dropped fields are
//! released, and nothing leaks.

mod runtime_support;

use hotlab::runtime::class::{Field, FieldType, Init};
use hotlab::runtime::handle::Handle;
use hotlab::runtime::iface::Hook;
use hotlab::runtime::rt::Runtime;
use proptest::prelude::*;
use runtime_support::*;

#[derive(Debug, Clone, Copy, PartialEq)]
enum Kind {
    Int,
    Float,
    Flag,
    Link,
}

fn ty(kind: Kind) -> FieldType {
    match kind {
        Kind::Int => FieldType::I64,
        Kind::Float => FieldType::F64,
        Kind::Flag => FieldType::Bool,
        Kind::Link => FieldType::Handle {
            class: "Leaf".into(),
            nullable: true,
        },
    }
}

/// A layout: for each of 6 names, absent or present with a kind and an initializer.
fn layout() -> impl Strategy<Value = Vec<Option<(Kind, u64)>>> {
    let kind = prop_oneof![
        Just(Kind::Int),
        Just(Kind::Float),
        Just(Kind::Flag),
        Just(Kind::Link)
    ];
    prop::collection::vec(prop::option::of((kind, 0u64..1000)), 6)
}

fn fields(layout: &[Option<(Kind, u64)>]) -> Vec<Field> {
    layout
        .iter()
        .enumerate()
        .filter_map(|(i, f)| {
            let (kind, init) = (*f)?;
            let init = if kind == Kind::Link { 0 } else { init };
            Some(field(&format!("f{i}"), ty(kind), Init::Bits(init)))
        })
        .collect()
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 64, ..ProptestConfig::default() })]

    #[test]
    fn migration_keeps_exactly_the_same_name_and_type(old in layout(), new in layout(), objects in 1usize..5) {
        let rt = Runtime::new();
        let leaf = rt.define(class("Leaf", vec![], vec![])).unwrap();
        let c = rt.define(class("M", fields(&old), vec![hook(seven)])).unwrap();
        let objs: Vec<Handle> = (0..objects).map(|_| rt.new_object(&c).unwrap()).collect();
        // Give every field a value of its own: 10_000 + 100 * object + field, or a new Leaf.
        for (o, h) in objs.iter().enumerate() {
            let obj = h.get().unwrap();
            for (i, f) in old.iter().enumerate() {
                match f {
                    Some((Kind::Link, _)) => obj.set_handle_field(&format!("f{i}"), rt.new_object(&leaf).unwrap()).unwrap(),
                    Some(_) => obj.write_field(&format!("f{i}"), 10_000 + 100 * o as u64 + i as u64).unwrap(),
                    None => {}
                }
            }
        }
        let report = rt.reload(&c, class("M", fields(&new), vec![hook(eight)])).unwrap();
        prop_assert_eq!(report.migrated, objects);

        let kept_links = (0..6).filter(|&i| matches!((old[i], new[i]), (Some((Kind::Link, _)), Some((Kind::Link, _))))).count();
        prop_assert_eq!(leaf.shell_count(), kept_links * objects);
        for (o, h) in objs.iter().enumerate() {
            let obj = h.get().unwrap();
            prop_assert_eq!(h.call().into_result().unwrap(), 8);
            for (i, f) in new.iter().enumerate() {
                let name = format!("f{i}");
                let Some((kind, init)) = f else { continue };
                let same = old[i].map(|(k, _)| k) == Some(*kind);
                if *kind == Kind::Link {
                    prop_assert_eq!(!obj.handle_field(&name).unwrap().is_null(), same);
                } else {
                    let want = if same { 10_000 + 100 * o as u64 + i as u64 } else { *init };
                    prop_assert_eq!(obj.read_field(&name).unwrap(), want);
                }
            }
        }
        drop(objs);
        prop_assert_eq!((c.shell_count(), leaf.shell_count()), (0, 0));
    }
}
