// Names the manifest or the caller gives (type variables, roles, attributes, tunables, templates, limits) are
// looked up as own properties only. `name in object` and `object[name]` also find Object.prototype's members,
// so a type variable named `constructor` read Object's constructor (a TypeError on every call) and a tunable
// named `constructor` passed as the manifest's; the suite's Python dicts have no such inherited names.

/** Whether `object` has `name` as its own property. */
export const has = (object, name) => object !== null && object !== undefined && Object.hasOwn(object, name);

/** `object[name]` when it is an own property, else undefined. */
export const own = (object, name) => (has(object, name) ? object[name] : undefined);
