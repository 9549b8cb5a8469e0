// Encrypted history: the payload codec, the data converter built on it, and CODEC_KEY parsing.
export { createDataConverter, failureConverterPath } from './data-converter';
export { ENCRYPTED_ENCODING, EncryptionCodec, KEY_ID_METADATA, encryptedKeyId } from './encryption-codec';
export { CodecKeyError, codecKeyProblem, keyIdOf, parseCodecKeys, type CodecKey, type CodecKeys } from './codec-keys';
