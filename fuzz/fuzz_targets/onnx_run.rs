#![no_main]
libfuzzer_sys::fuzz_target!(|data: &[u8]| spyre_fuzz::onnx_run(data));
