//! Element reads in place (`backend/jit/lower_index.rs`): `G[i]`, `G[i][j]`, `o.a[i]`,
//! `o.g[i][j]` of module variables and fields give the same values, errors and error locations
//! on every backend as the interpreter's read of a copy, and leak nothing, also when an index
//! raises or when an index could change the array (then the copy is kept).

mod common;

use common::same_everywhere;

#[test]
fn module_array_reads() {
    same_everywhere(
        "var G = [1, 2, 3, 4]
         let L = [10, 20, 30, 40]
         fn main() -> i64 {
             var acc = 0
             for i in 0..100 { acc += G[i & 3] * L[(i * 3) & 3] }
             return acc
         }",
        "6500",
    );
}

#[test]
fn module_array_read_out_of_range_is_located() {
    same_everywhere(
        "var G = [1, 2, 3]
         fn main() -> i64 {
             var i = 0
             var acc = 0
             while i < 10 {
                 acc += G[i]
                 i += 1
             }
             return acc
         }",
        "error: index 3 out of range for length 3 at 6:25",
    );
}

#[test]
fn an_index_that_writes_the_array_reads_the_old_array() {
    // `G[f()]`: the array is read before the index runs, as the interpreter does.
    same_everywhere(
        "var G = [1, 2, 3]
         fn f() -> i64 { G[0] = 99; return 0 }
         fn main() -> i64 { return G[f()] * 1000 + G[0] }",
        "1099",
    );
}

#[test]
fn nested_module_arrays_and_rows() {
    same_everywhere(
        "var GN = [[1, 2, 3], [4, 5, 6]]
         fn main() -> i64 {
             var acc = 0
             for i in 0..2 { for j in 0..3 { acc = acc * 2 + GN[i][j] } }
             let row = GN[1]
             GN[1][0] = 100
             return acc * 1000 + row[0] * 10 + GN[1][0]
         }",
        "120140",
    );
}

#[test]
fn nested_errors_keep_their_order_and_location() {
    // The outer index is checked before the inner index expression runs.
    same_everywhere(
        "var GN = [[1, 2], [3, 4]]
         fn main() -> i64 {
             let i = 2
             let z = 0
             return GN[i][1 / z]
         }",
        "error: index 2 out of range for length 2 at 5:21",
    );
    same_everywhere(
        "var GN = [[1, 2], [3, 4]]
         fn main() -> i64 {
             let i = 1
             let z = 0
             return GN[i][1 / z]
         }",
        "error: division by zero at 5:29",
    );
}

#[test]
fn managed_module_array_elements() {
    same_everywhere(
        r#"var S = ["a", "bb", "ccc"]
           var SS = [["x", "yy"], ["zzz", "wwww"]]
           fn main() -> i64 {
               var n = 0
               for i in 0..30 { n += S[i % 3].len() + SS[i & 1][(i >> 1) & 1].len() }
               let s = S[2]
               S[2] = "d"
               let row = SS[1]
               SS[1][0] = ""
               return n * 100 + s.len() * 10 + row[0].len()
           }"#,
        "13433",
    );
    same_everywhere(
        r#"var S = ["a", "bb", "ccc"]
           fn main() -> i64 {
               var n = 0
               for i in 0..10 { n += S[i].len() }
               return n
           }"#,
        "error: index 3 out of range for length 3 at 4:38",
    );
}

#[test]
fn field_array_reads() {
    same_everywhere(
        "class C {
             var a: [i64; 4] = [1, 2, 3, 4]
             var g: [[i64; 2]; 3] = [[1, 2], [3, 4], [5, 6]]
             fn sum(self) -> i64 {
                 var s = 0
                 for i in 0..12 { s += self.a[i & 3] + self.g[i % 3][i & 1] }
                 return s
             }
         }
         fn make() -> C { return new C() }
         fn main() -> i64 {
             let c = new C()
             c.a[1] = 20
             let row = c.g[2]
             c.g[2][0] = 50
             return c.sum() * 10000 + make().a[3] * 1000 + row[0] * 100 + c.g[2][0]
         }",
        "2164550",
    );
}

#[test]
fn field_array_errors_are_located_and_release_the_object() {
    same_everywhere(
        "class C { var a: [i64; 4] = [1, 2, 3, 4] }
         fn main() -> i64 {
             let c = new C()
             var s = 0
             for i in 0..5 { s += c.a[i] }
             return s
         }",
        "error: index 4 out of range for length 4 at 5:35",
    );
    // An owned receiver (`make()`) is held while the index raises.
    same_everywhere(
        r#"class C { var a: [str; 2] = ["p", "q"] }
           fn make() -> C { return new C() }
           fn main() -> i64 {
               let z = 0
               return make().a[1 / z].len()
           }"#,
        "error: division by zero at 5:34",
    );
    same_everywhere(
        "class C { var g: [[i64; 2]; 2] = [[1, 2], [3, 4]] }
         fn main() -> i64 {
             let c: C? = null
             return c.g[0][1]
         }",
        "error: null handle at 4:21",
    );
}

#[test]
fn for_each_over_a_module_array_sees_a_snapshot() {
    same_everywhere(
        r#"var G = [1, 2, 3]
           var S = ["a", "b"]
           fn main() -> i64 {
               var acc = 0
               for x in G { G[2] = 10; acc = acc * 10 + x }
               for s in S { S[1] = "long"; acc = acc * 10 + s.len() }
               return acc
           }"#,
        "12311",
    );
}
