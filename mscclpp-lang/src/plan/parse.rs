//! Reading and writing plans as JSON.

use std::path::Path;

use super::error::PlanError;
use super::schema::Plan;
use super::validate::validate;
use crate::location::Location;

/// Parses a plan from JSON text and validates it.
///
/// Errors name the rank, thread block, operation and field:
/// ```
/// let err = mscclpp_lang::plan::parse_plan(r#"{"name":"x"}"#).unwrap_err();
/// assert!(err.to_string().contains("collective"));
/// ```
pub fn parse_plan(text: &str) -> Result<Plan, PlanError> {
    let plan = parse_plan_unchecked(text)?;
    validate(&plan)?;
    Ok(plan)
}

/// Parses a plan from JSON text without the semantic checks of [`validate`].
pub fn parse_plan_unchecked(text: &str) -> Result<Plan, PlanError> {
    let de = &mut serde_json::Deserializer::from_str(text);
    serde_path_to_error::deserialize::<_, Plan>(de).map_err(|e| {
        let path = e.path().to_string();
        let inner = e.into_inner();
        let message = if inner.is_syntax() || inner.is_eof() {
            format!("not valid JSON: {inner}")
        } else {
            let mut m = inner.to_string();
            if m.contains("unknown variant") && path.ends_with(".name") {
                m.push_str("; this is not an operation of the MSCCL++ plan schema");
            }
            m
        };
        PlanError::Malformed { location: Box::new(location_of_path(&path)), message }
    })
}

/// Reads a plan file and validates it.
pub fn read_plan(path: impl AsRef<Path>) -> Result<Plan, PlanError> {
    let path = path.as_ref();
    let text = std::fs::read_to_string(path)
        .map_err(|e| PlanError::Io { path: path.display().to_string(), message: e.to_string() })?;
    parse_plan(&text).map_err(|e| match e {
        PlanError::Malformed { location, message } => {
            PlanError::Malformed { location, message: format!("{message} (in {})", path.display()) }
        }
        PlanError::Invalid { location, message } => {
            PlanError::Invalid { location, message: format!("{message} (in {})", path.display()) }
        }
        other => other,
    })
}

/// Serializes a plan as pretty JSON, keys in the order the MSCCL++ DSL emits them.
pub fn emit_plan(plan: &Plan) -> String {
    // Serializing plain data structs into a String cannot fail.
    serde_json::to_string_pretty(plan).unwrap_or_default()
}

/// Serializes a plan as compact JSON.
pub fn emit_plan_compact(plan: &Plan) -> String {
    serde_json::to_string(plan).unwrap_or_default()
}

/// Turns a serde path such as `gpus[1].threadblocks[0].ops[3].name` into a [`Location`].
fn location_of_path(path: &str) -> Location {
    let mut loc = Location::default();
    let mut rest = path;
    let take = |key: &str, rest: &mut &str| -> Option<usize> {
        let prefix = format!("{key}[");
        let s = rest.strip_prefix(&prefix)?;
        let end = s.find(']')?;
        let n = s[..end].parse().ok()?;
        *rest = s[end + 1..].trim_start_matches('.');
        Some(n)
    };
    if let Some(r) = take("gpus", &mut rest) {
        loc.rank = Some(r);
        if let Some(t) = take("threadblocks", &mut rest) {
            loc.tb = Some(t);
            if let Some(o) = take("ops", &mut rest) {
                loc.op = Some(o);
                if let Some(i) = take("ops", &mut rest) {
                    loc.inner = Some(i);
                }
            }
        }
    }
    if !rest.is_empty() && rest != "?" {
        loc.field = Some(rest.to_string());
    } else if path.is_empty() || path == "." {
        loc.field = None;
    }
    loc
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn path_becomes_location() {
        let l = location_of_path("gpus[1].threadblocks[0].ops[3].dst_buff[0].index");
        assert_eq!(l.rank, Some(1));
        assert_eq!(l.tb, Some(0));
        assert_eq!(l.op, Some(3));
        assert_eq!(l.field.as_deref(), Some("dst_buff[0].index"));
        let l = location_of_path("gpus[0].threadblocks[2].ops[0].ops[4].name");
        assert_eq!(l.inner, Some(4));
    }

    #[test]
    fn bad_json_is_an_error() {
        let e = parse_plan("{ not json").unwrap_err();
        assert!(e.to_string().contains("not valid JSON"), "{e}");
    }
}
