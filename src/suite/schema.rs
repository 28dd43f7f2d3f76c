//! The `fields` scorer's schema: each field's type, allowed values and whether it may be null.

use indexmap::IndexMap;
use serde::{Deserialize, Serialize};

/// The type of one extracted field.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
#[non_exhaustive]
pub enum FieldType {
    /// `true` or `false`.
    Boolean,
    /// A whole number (`3`, `3.0`); compared as a number.
    Integer,
    /// Any finite number.
    Number,
    /// Text, compared trimmed and case-folded.
    String,
    /// One of `values` (case-folded).
    Enum,
    /// A list of `values`, compared as a set.
    MultiEnum,
}

impl FieldType {
    /// The type as a schema writes it (`multi_enum`).
    pub fn name(self) -> &'static str {
        match self {
            FieldType::Boolean => "boolean",
            FieldType::Integer => "integer",
            FieldType::Number => "number",
            FieldType::String => "string",
            FieldType::Enum => "enum",
            FieldType::MultiEnum => "multi_enum",
        }
    }
}

/// One field of a `fields` scorer's schema: `{ type: enum, values: [...], nullable: true }`
/// or the shorthand `integer`.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct FieldSpec {
    /// `type:`: what values the field takes and how they compare.
    #[serde(rename = "type")]
    pub kind: FieldType,
    /// Allowed values for `enum` and `multi_enum`.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub values: Vec<String>,
    /// A field is nullable unless it says `nullable: false`.
    pub nullable: bool,
    /// What the field means, for the model: it is in the schema `{{ schema }}` renders.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct FieldSpecFull {
    #[serde(rename = "type")]
    kind: FieldType,
    #[serde(default, alias = "enum")]
    values: Vec<String>,
    #[serde(default)]
    nullable: Option<bool>,
    #[serde(default)]
    description: Option<String>,
}

impl<'de> Deserialize<'de> for FieldSpec {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> serde::de::Visitor<'de> for V {
            type Value = FieldSpec;
            fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                f.write_str("a field type (boolean, integer, number, string, enum, multi_enum) or { type: ..., values: [...] }")
            }
            fn visit_str<E: serde::de::Error>(self, v: &str) -> Result<FieldSpec, E> {
                let kind: FieldType = serde::Deserialize::deserialize(
                    serde::de::value::StrDeserializer::<E>::new(v),
                )?;
                Ok(FieldSpec {
                    kind,
                    values: vec![],
                    nullable: true,
                    description: None,
                })
            }
            fn visit_map<A: serde::de::MapAccess<'de>>(
                self,
                map: A,
            ) -> Result<FieldSpec, A::Error> {
                let full =
                    FieldSpecFull::deserialize(serde::de::value::MapAccessDeserializer::new(map))?;
                Ok(FieldSpec {
                    kind: full.kind,
                    values: full.values,
                    nullable: full.nullable.unwrap_or(true),
                    description: full.description,
                })
            }
        }
        d.deserialize_any(V)
    }
}

/// A fields schema in declaration order.
pub type Schema = IndexMap<String, FieldSpec>;
