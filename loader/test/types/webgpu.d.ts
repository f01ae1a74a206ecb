// The WebGPU flag namespaces the sources use, which TypeScript's lib.dom (6.0) declares as types only. For the
// check alone (tsconfig.json): the published types/ name none of them.
declare const GPUBufferUsage: { readonly [flag: string]: number };
declare const GPUShaderStage: { readonly [flag: string]: number };
declare const GPUMapMode: { readonly [flag: string]: number };
