//! Element-wise reductions on raw little-endian bytes.

use half::{bf16, f16};

use super::dtype::DataType;
use crate::plan::ReduceOp;

/// `acc[i] = acc[i] op src[i]` element-wise over the common length of both slices (whole elements only).
/// Integer sums wrap, as on the GPU.
pub fn reduce_into(dtype: DataType, op: ReduceOp, acc: &mut [u8], src: &[u8]) {
    let n = acc.len().min(src.len());
    let (acc, src) = (&mut acc[..n], &src[..n]);
    match dtype {
        DataType::F32 => lanes::<4>(acc, src, |a, b| {
            let (x, y) = (f32::from_le_bytes(a), f32::from_le_bytes(b));
            apply_f(op, x, y).to_le_bytes()
        }),
        DataType::F16 => lanes::<2>(acc, src, |a, b| {
            let (x, y) = (f16::from_le_bytes(a).to_f32(), f16::from_le_bytes(b).to_f32());
            f16::from_f32(apply_f(op, x, y)).to_le_bytes()
        }),
        DataType::Bf16 => lanes::<2>(acc, src, |a, b| {
            let (x, y) = (bf16::from_le_bytes(a).to_f32(), bf16::from_le_bytes(b).to_f32());
            bf16::from_f32(apply_f(op, x, y)).to_le_bytes()
        }),
        DataType::I32 => lanes::<4>(acc, src, |a, b| {
            let (x, y) = (i32::from_le_bytes(a), i32::from_le_bytes(b));
            match op {
                ReduceOp::Sum => x.wrapping_add(y),
                ReduceOp::Min => x.min(y),
                ReduceOp::Max => x.max(y),
            }
            .to_le_bytes()
        }),
        DataType::U32 => lanes::<4>(acc, src, |a, b| {
            let (x, y) = (u32::from_le_bytes(a), u32::from_le_bytes(b));
            match op {
                ReduceOp::Sum => x.wrapping_add(y),
                ReduceOp::Min => x.min(y),
                ReduceOp::Max => x.max(y),
            }
            .to_le_bytes()
        }),
        DataType::U8 => {
            for (a, &b) in acc.iter_mut().zip(src) {
                *a = match op {
                    ReduceOp::Sum => a.wrapping_add(b),
                    ReduceOp::Min => (*a).min(b),
                    ReduceOp::Max => (*a).max(b),
                };
            }
        }
    }
}

/// One reduction step on decoded values, rounded to the element type.
pub fn reduce_value(dtype: DataType, op: ReduceOp, a: f64, b: f64) -> f64 {
    let mut x = vec![0u8; dtype.size()];
    let mut y = vec![0u8; dtype.size()];
    dtype.encode(a, &mut x);
    dtype.encode(b, &mut y);
    reduce_into(dtype, op, &mut x, &y);
    dtype.decode(&x)
}

#[inline]
fn apply_f(op: ReduceOp, x: f32, y: f32) -> f32 {
    match op {
        ReduceOp::Sum => x + y,
        ReduceOp::Min => x.min(y),
        ReduceOp::Max => x.max(y),
    }
}

#[inline]
fn lanes<const W: usize>(acc: &mut [u8], src: &[u8], f: impl Fn([u8; W], [u8; W]) -> [u8; W]) {
    for (a, b) in acc.chunks_exact_mut(W).zip(src.chunks_exact(W)) {
        let mut x = [0u8; W];
        x.copy_from_slice(a);
        let mut y = [0u8; W];
        y.copy_from_slice(b);
        a.copy_from_slice(&f(x, y));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sum_min_max() {
        for t in DataType::ALL {
            for (op, want) in [(ReduceOp::Sum, 7.0), (ReduceOp::Min, 3.0), (ReduceOp::Max, 4.0)] {
                assert_eq!(reduce_value(t, op, 3.0, 4.0), want, "{t} {op}");
            }
        }
    }
}
