/* ctensor/module_containers.h: Identity, ModuleList, and parameters shared
 * between modules (weight tying), as torch.nn has them.
 *
 *   ct_module *emb = ct_embedding_new(vocab, dim, NULL);
 *   ct_module *head = ct_linear_new(dim, vocab, false, NULL);
 *   ct_module_tie_parameter(head, "weight", ct_module_get(emb, "weight"));
 *   // torch: head.weight = emb.weight. The tensor is listed once by
 *   // ct_module_parameters and receives the sum of both uses' gradients.
 */
#ifndef CTENSOR_MODULE_CONTAINERS_H
#define CTENSOR_MODULE_CONTAINERS_H

#include "ctensor/api.h"
#include "ctensor/nn.h"
#include "ctensor/tensor.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Identity: forward returns an alias of its input (a new handle, the same
 * data and autograd history); no parameters. */
CT_API ct_module *ct_identity_new(void);

/* ModuleList: children named "0", "1", ... in order, registered (so their
 * parameters and state are listed, moved and saved) but not called: it has
 * no forward of its own (ct_module_forward fails with CT_ERR_ARG), a user
 * module's forward calls the children itself. */
CT_API ct_module *ct_module_list_new(void);
/* Appends child (owned by list from now on, freed on failure); returns child
 * (borrowed), or NULL if list is not a ModuleList. */
CT_API ct_module *ct_module_list_append(ct_module *list, ct_module *child);
/* The number of children, or -1 if list is not a ModuleList. */
CT_API int ct_module_list_len(const ct_module *list);
/* Child i (negative counts from the end, as Python), or NULL with
 * CT_ERR_ARG out of range. */
CT_API ct_module *ct_module_list_get(const ct_module *list, int i);

/* Weight tying: the parameter full_name of m ("weight", "decoder.weight")
 * becomes `shared` (borrowed; m keeps its own reference), a leaf requiring
 * grad of the same shape, dtype and device, typically another module's
 * parameter. Built-in modules read it at their next forward; the replaced
 * tensor is released. ct_module_parameters and ct_module_num_parameters then
 * list the shared tensor once (at its first place, torch's parameters()),
 * backward accumulates the gradients of every use into it, and the
 * state_dict (ct_module_state, ct_module_save) keeps every name, as torch's.
 * CT_ERR_ARG for an unknown name or a non-leaf, CT_ERR_SHAPE / CT_ERR_DTYPE /
 * CT_ERR_DEVICE naming both when they differ. */
CT_API ct_status ct_module_tie_parameter(ct_module *m, const char *full_name, ct_tensor *shared);

#ifdef __cplusplus
}
#endif
#endif /* CTENSOR_MODULE_CONTAINERS_H */
