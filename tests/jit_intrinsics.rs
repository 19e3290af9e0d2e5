//! `sqrt` as the machine's instruction on the compiled backends (`lower_expr.rs`): the same
//! bits as the host function the interpreter calls, for ordinary values, zeros, infinities,
//! negative numbers and NaN.

mod common;

use common::same_everywhere;

#[test]
fn sqrt_gives_the_host_functions_bits() {
    same_everywhere(
        "native fn sqrt(x: f64) -> f64
         fn bits(x: f64) -> i64 { return (x * 1000000.0) as i64 }
         fn main() -> i64 {
             var acc = 0
             for i in 0..100 { acc += bits(sqrt(i as f64 * 0.37)) }
             let inf = 1.0 / 0.0
             assert(sqrt(inf) == inf)
             assert(sqrt(-0.0) == 0.0)
             let nan = sqrt(-1.0)
             assert(nan != nan)
             assert(sqrt(0.0 - inf) != sqrt(0.0 - inf))
             return acc
         }",
        "402352155",
    );
}
