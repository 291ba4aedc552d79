//! Protobuf wire format of a bound message, for decoding as
//! `ModelConfig`: every set field once, in field-number order
//! (packed lists where the schema packs them). `None` for what it
//! does not cover (groups, unknown fields, a value of the wrong
//! kind). Extensions need no case: the schema is proto3, whose
//! messages cannot be extended.

use prost::encoding::{encode_key, encode_varint, WireType};
use prost_reflect::{DynamicMessage, FieldDescriptor, Kind, MapKey, Value};

/// Encodes `msg`; `None` when it holds something this encoder does not cover.
pub fn encode(msg: &DynamicMessage) -> Option<Vec<u8>> {
    let mut buf = Vec::with_capacity(4096);
    message(&mut buf, msg)?;
    Some(buf)
}

/// Appends one field's encoding (a single element of a repeated field
/// included) to `buf`; `None` as for [`encode`].
pub fn encode_field(buf: &mut Vec<u8>, fd: &FieldDescriptor, value: &Value) -> Option<()> {
    field(buf, fd, value)
}

fn message(buf: &mut Vec<u8>, msg: &DynamicMessage) -> Option<()> {
    if msg.unknown_fields().next().is_some() {
        return None;
    }
    for (field, value) in msg.fields() {
        self::field(buf, &field, value)?;
    }
    Some(())
}

/// A length-delimited record: the length is written after the
/// body (one byte reserved, moved up in the rare case it needs more).
/// Also the encoder of the static tables (`table`).
pub(super) fn delimited(
    buf: &mut Vec<u8>,
    number: u32,
    body: impl FnOnce(&mut Vec<u8>) -> Option<()>,
) -> Option<()> {
    encode_key(number, WireType::LengthDelimited, buf);
    let at = buf.len();
    buf.push(0);
    body(buf)?;
    let len = buf.len() - at - 1;
    if len < 0x80 {
        buf[at] = len as u8;
    } else {
        let mut prefix = Vec::with_capacity(10);
        encode_varint(len as u64, &mut prefix);
        buf.splice(at..at + 1, prefix);
    }
    Some(())
}

fn field(buf: &mut Vec<u8>, field: &FieldDescriptor, value: &Value) -> Option<()> {
    if field.is_group() {
        return None;
    }
    let number = field.number();
    match value {
        // Messages and strings need no kind (looking it up is
        // not free).
        Value::Message(_) | Value::String(_) | Value::Bytes(_) => {
            length_delimited(buf, number, value)
        }
        Value::List(items) if items.is_empty() => Some(()),
        Value::List(items) if field.is_packed() => {
            let kind = field.kind();
            delimited(buf, number, |b| {
                items.iter().try_for_each(|v| raw(b, &kind, v))
            })
        }
        Value::List(items) => {
            let kind = field.kind();
            items.iter().try_for_each(|v| single(buf, number, &kind, v))
        }
        Value::Map(map) => {
            let kind = field.kind();
            let entry = kind.as_message()?;
            let (kf, vf) = (entry.map_entry_key_field(), entry.map_entry_value_field());
            let (key_kind, value_kind) = (kf.kind(), vf.kind());
            map.iter().try_for_each(|(k, v)| {
                let k = match k {
                    MapKey::Bool(x) => Value::Bool(*x),
                    MapKey::I32(x) => Value::I32(*x),
                    MapKey::I64(x) => Value::I64(*x),
                    MapKey::U32(x) => Value::U32(*x),
                    MapKey::U64(x) => Value::U64(*x),
                    MapKey::String(x) => Value::String(x.clone()),
                };
                delimited(buf, number, |b| {
                    single(b, kf.number(), &key_kind, &k)?;
                    single(b, vf.number(), &value_kind, v)
                })
            })
        }
        v => single(buf, number, &field.kind(), v),
    }
}

/// A message, string or bytes value with its key.
fn length_delimited(buf: &mut Vec<u8>, number: u32, value: &Value) -> Option<()> {
    let bytes = |buf: &mut Vec<u8>, b: &[u8]| {
        encode_key(number, WireType::LengthDelimited, buf);
        encode_varint(b.len() as u64, buf);
        buf.extend_from_slice(b);
        Some(())
    };
    match value {
        Value::Message(m) => delimited(buf, number, |b| message(b, m)),
        Value::String(s) => bytes(buf, s.as_bytes()),
        Value::Bytes(b) => bytes(buf, b),
        _ => None,
    }
}

/// One value with its key.
fn single(buf: &mut Vec<u8>, number: u32, kind: &Kind, value: &Value) -> Option<()> {
    match value {
        Value::Message(_) | Value::String(_) | Value::Bytes(_) => {
            length_delimited(buf, number, value)
        }
        Value::List(_) | Value::Map(_) => None,
        _ => {
            let wire_type = match kind {
                Kind::Sfixed32 | Kind::Fixed32 | Kind::Float => WireType::ThirtyTwoBit,
                Kind::Sfixed64 | Kind::Fixed64 | Kind::Double => WireType::SixtyFourBit,
                _ => WireType::Varint,
            };
            encode_key(number, wire_type, buf);
            raw(buf, kind, value)
        }
    }
}

/// A scalar without its key (as in a packed list).
fn raw(buf: &mut Vec<u8>, kind: &Kind, value: &Value) -> Option<()> {
    match (value, kind) {
        (Value::Bool(x), Kind::Bool) => encode_varint(u64::from(*x), buf),
        (Value::I32(x), Kind::Int32) | (Value::EnumNumber(x), Kind::Enum(_)) => {
            encode_varint(i64::from(*x) as u64, buf)
        }
        (Value::I32(x), Kind::Sint32) => {
            encode_varint(u64::from(((x << 1) ^ (x >> 31)) as u32), buf)
        }
        (Value::I32(x), Kind::Sfixed32) => buf.extend_from_slice(&x.to_le_bytes()),
        (Value::I64(x), Kind::Int64) => encode_varint(*x as u64, buf),
        (Value::I64(x), Kind::Sint64) => encode_varint(((x << 1) ^ (x >> 63)) as u64, buf),
        (Value::I64(x), Kind::Sfixed64) => buf.extend_from_slice(&x.to_le_bytes()),
        (Value::U32(x), Kind::Uint32) => encode_varint(u64::from(*x), buf),
        (Value::U32(x), Kind::Fixed32) => buf.extend_from_slice(&x.to_le_bytes()),
        (Value::U64(x), Kind::Uint64) => encode_varint(*x, buf),
        (Value::U64(x), Kind::Fixed64) => buf.extend_from_slice(&x.to_le_bytes()),
        (Value::F32(x), Kind::Float) => buf.extend_from_slice(&x.to_le_bytes()),
        (Value::F64(x), Kind::Double) => buf.extend_from_slice(&x.to_le_bytes()),
        _ => return None,
    }
    Some(())
}
