// /v2/attributes: key/value facts about deployables. List (?deployable_id=),
// show, create and delete; reads for project managers and admins, writes admin.
import { invalid, notFound } from '../../../errors.js';
import { authorize, readCyborgBody, readCyborgQuery, selfLink, type CyborgContext } from '../profile.js';
import { presentAttribute } from '../../present.js';
import { createAttribute, deleteAttribute, findAttribute, listAttributes } from '../../repo/attributes.js';
import { AttributeListQuery, CreateAttributeBody } from '../../schemas/attributes.js';
import { AttributeListSchema, AttributeSchema } from '../../schemas/responses.js';
import { RouteTable, always, zodQuery, answers } from '../../../http/route-table.js';
import { cyborgHttp } from '../profile.js';

const link = (c: CyborgContext) => (collection: string, uuid: string) => selfLink(c, collection, uuid);
export const attributeRoutes = new RouteTable('accelerator', cyborgHttp);

attributeRoutes.resource('/attributes', {
  GET: {
    summary: 'List attributes',
    query: () => zodQuery(AttributeListQuery),
    ...answers(200, 'Attributes', 'AttributeList', AttributeListSchema),
    handler: async (c) => {
      authorize(c, 'cyborg:attribute:get_all');
      const { deployable_id: deployableId } = readCyborgQuery(c, AttributeListQuery);
      const rows = await listAttributes(c.var.deps.store.db, { deployableId });
      return c.json({ attributes: rows.map((r) => presentAttribute(r, link(c))) });
    },
  },
  POST: {
    summary: 'Create an attribute',
    body: always(CreateAttributeBody),
    bodyName: 'CreateAttribute',
    ...answers(201, 'The attribute', 'Attribute', AttributeSchema),
    handler: async (c) => {
      authorize(c, 'cyborg:attribute:create');
      const input = await readCyborgBody(c, CreateAttributeBody);
      const { deps } = c.var;
      const row = await createAttribute(
        deps.store,
        { uuid: deps.newId(), deployableId: input.deployable_id, key: input.key, value: input.value },
        deps.clock().toISOString(),
      );
      if (!row) throw invalid(`Deployable ${input.deployable_id} could not be found.`);
      return c.json(presentAttribute(row, link(c)), 201);
    },
  },
});

attributeRoutes.resource('/attributes/:uuid', {
  GET: {
    summary: 'Show an attribute',
    ...answers(200, 'The attribute', 'Attribute', AttributeSchema),
    handler: async (c) => {
      authorize(c, 'cyborg:attribute:get_one');
      const row = await findAttribute(c.var.deps.store.db, c.req.param('uuid'));
      if (!row) throw notFound(`Attribute ${c.req.param('uuid')} could not be found.`);
      return c.json(presentAttribute(row, link(c)));
    },
  },
  DELETE: {
    summary: 'Delete an attribute',
    responses: { 204: 'Deleted' },
    handler: async (c) => {
      authorize(c, 'cyborg:attribute:delete');
      const uuid = c.req.param('uuid');
      const removed = await deleteAttribute(c.var.deps.store, uuid);
      if (!removed) throw notFound(`Attribute ${uuid} could not be found.`);
      return c.body(null, 204);
    },
  },
});
