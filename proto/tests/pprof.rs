//! pprof's messages are memcity's own .proto of a published format: each field must carry the
//! published number and wire type, or `go tool pprof` and Pyroscope read garbage. Each field is
//! encoded alone here and its tag (number << 3 | wire type) compared with the published one.

use memcity_proto::pprof::{Function, Label, Line, Location, Mapping, Profile, Sample, ValueType};
use prost::Message;

/// The first byte (or two) of a message holding one field: its tag, as a varint.
fn tag(bytes: Vec<u8>) -> u32 {
    let mut tag = 0u32;
    for (i, b) in bytes.iter().enumerate().take(2) {
        tag |= u32::from(b & 0x7f) << (7 * i);
        if b & 0x80 == 0 {
            break;
        }
    }
    tag
}

const VARINT: u32 = 0;
const LEN: u32 = 2;

fn t(number: u32, wire: u32) -> u32 {
    number << 3 | wire
}

#[test]
fn profile_fields_carry_the_published_numbers() {
    let p = |f: fn(&mut Profile)| {
        let mut m = Profile::default();
        f(&mut m);
        tag(m.encode_to_vec())
    };
    assert_eq!(p(|m| m.sample_type.push(ValueType::default())), t(1, LEN));
    assert_eq!(p(|m| m.sample.push(Sample::default())), t(2, LEN));
    assert_eq!(p(|m| m.mapping.push(Mapping::default())), t(3, LEN));
    assert_eq!(p(|m| m.location.push(Location::default())), t(4, LEN));
    assert_eq!(p(|m| m.function.push(Function::default())), t(5, LEN));
    assert_eq!(p(|m| m.string_table.push(String::new())), t(6, LEN));
    assert_eq!(p(|m| m.time_nanos = 1), t(9, VARINT));
    assert_eq!(p(|m| m.duration_nanos = 1), t(10, VARINT));
    assert_eq!(
        p(|m| m.period_type = Some(ValueType::default())),
        t(11, LEN)
    );
    assert_eq!(p(|m| m.period = 1), t(12, VARINT));
    // Repeated int64s are packed in proto3.
    assert_eq!(p(|m| m.comment.push(1)), t(13, LEN));
    assert_eq!(p(|m| m.default_sample_type = 1), t(14, VARINT));
}

#[test]
fn inner_fields_carry_the_published_numbers() {
    let vt = |f: fn(&mut ValueType)| {
        let mut m = ValueType::default();
        f(&mut m);
        m.encode_to_vec()
    };
    assert_eq!(tag(vt(|m| m.r#type = 1)), t(1, VARINT));
    assert_eq!(tag(vt(|m| m.unit = 1)), t(2, VARINT));
    let sample = |f: fn(&mut Sample)| {
        let mut m = Sample::default();
        f(&mut m);
        m.encode_to_vec()
    };
    assert_eq!(tag(sample(|m| m.location_id.push(1))), t(1, LEN));
    assert_eq!(tag(sample(|m| m.value.push(1))), t(2, LEN));
    assert_eq!(tag(sample(|m| m.label.push(Label::default()))), t(3, LEN));
    let label = |f: fn(&mut Label)| {
        let mut m = Label::default();
        f(&mut m);
        m.encode_to_vec()
    };
    assert_eq!(tag(label(|m| m.key = 1)), t(1, VARINT));
    assert_eq!(tag(label(|m| m.str = 1)), t(2, VARINT));
    assert_eq!(tag(label(|m| m.num = 1)), t(3, VARINT));
    assert_eq!(tag(label(|m| m.num_unit = 1)), t(4, VARINT));
    let mapping = |f: fn(&mut Mapping)| {
        let mut m = Mapping::default();
        f(&mut m);
        m.encode_to_vec()
    };
    assert_eq!(tag(mapping(|m| m.id = 1)), t(1, VARINT));
    assert_eq!(tag(mapping(|m| m.memory_start = 1)), t(2, VARINT));
    assert_eq!(tag(mapping(|m| m.memory_limit = 1)), t(3, VARINT));
    assert_eq!(tag(mapping(|m| m.file_offset = 1)), t(4, VARINT));
    assert_eq!(tag(mapping(|m| m.filename = 1)), t(5, VARINT));
    assert_eq!(tag(mapping(|m| m.build_id = 1)), t(6, VARINT));
    assert_eq!(tag(mapping(|m| m.has_functions = true)), t(7, VARINT));
    assert_eq!(tag(mapping(|m| m.has_filenames = true)), t(8, VARINT));
    assert_eq!(tag(mapping(|m| m.has_line_numbers = true)), t(9, VARINT));
    assert_eq!(tag(mapping(|m| m.has_inline_frames = true)), t(10, VARINT));
    let location = |f: fn(&mut Location)| {
        let mut m = Location::default();
        f(&mut m);
        m.encode_to_vec()
    };
    assert_eq!(tag(location(|m| m.id = 1)), t(1, VARINT));
    assert_eq!(tag(location(|m| m.mapping_id = 1)), t(2, VARINT));
    assert_eq!(tag(location(|m| m.address = 1)), t(3, VARINT));
    assert_eq!(tag(location(|m| m.line.push(Line::default()))), t(4, LEN));
    assert_eq!(tag(location(|m| m.is_folded = true)), t(5, VARINT));
    let line = |f: fn(&mut Line)| {
        let mut m = Line::default();
        f(&mut m);
        m.encode_to_vec()
    };
    assert_eq!(tag(line(|m| m.function_id = 1)), t(1, VARINT));
    assert_eq!(tag(line(|m| m.line = 1)), t(2, VARINT));
    let function = |f: fn(&mut Function)| {
        let mut m = Function::default();
        f(&mut m);
        m.encode_to_vec()
    };
    assert_eq!(tag(function(|m| m.id = 1)), t(1, VARINT));
    assert_eq!(tag(function(|m| m.name = 1)), t(2, VARINT));
    assert_eq!(tag(function(|m| m.system_name = 1)), t(3, VARINT));
    assert_eq!(tag(function(|m| m.filename = 1)), t(4, VARINT));
    assert_eq!(tag(function(|m| m.start_line = 1)), t(5, VARINT));
}
